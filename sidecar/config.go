package sidecar

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// loadConfig reads the configuration initialize names: the discovered
// files, then configFiles, then the inline servers. A bad server entry or
// a file that does not parse does not fail initialize (the server is
// invalid, the file is reported); only params that are malformed do, and
// the error's data lists the problems.
//
// inlineName names initialize.servers in problems and messages.
func loadConfig(p *protocol.InitializeParams, env config.Lookup, inlineName string) (*config.Loaded, error) {
	var sources []config.Source
	if d := p.ConfigDiscovery; d != nil {
		var bad []*config.Error
		if !filepath.IsAbs(d.Cwd) {
			bad = append(bad, &config.Error{File: config.InlineSource, Key: "configDiscovery.cwd", Message: "must be an absolute directory"})
		}
		for i, s := range d.Sources {
			if !slices.Contains(config.DiscoveryTools(), s) {
				bad = append(bad, &config.Error{File: config.InlineSource, Key: fmt.Sprintf("configDiscovery.sources[%d]", i),
					Message: fmt.Sprintf("unknown source %q; use %s", s, strings.Join(config.DiscoveryTools(), ", "))})
			}
		}
		if len(bad) > 0 {
			return nil, configParamsError(bad)
		}
		home, _ := env("HOME")
		found, _ := config.Discover(config.DiscoverOptions{Home: home, Cwd: d.Cwd, Env: env, Tools: d.Sources, TrustProject: d.TrustProject})
		sources = append(sources, found...)
	}
	sources = append(sources, config.FileSources(p.ConfigFiles)...)
	l := config.LoadAs(sources, p.Servers, inlineName, env)
	// initialize.servers that is not an object of servers is malformed
	// params, not a configuration to report.
	var bad []*config.Error
	for _, e := range l.Errors {
		if e.File == inlineName && e.Server == "" {
			bad = append(bad, e)
		}
	}
	if len(bad) > 0 {
		return nil, configParamsError(bad)
	}
	return l, nil
}

func configParamsError(problems []*config.Error) *protocol.Error {
	msgs := make([]string, len(problems))
	for i, e := range problems {
		msgs[i] = e.Error()
	}
	err := protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "invalid initialize params: "+strings.Join(msgs, "; "))
	err.Data.ConfigErrors = problemsOf(problems)
	return err
}

func problemsOf(es []*config.Error) []protocol.ConfigProblem {
	out := make([]protocol.ConfigProblem, len(es))
	for i, e := range es {
		out[i] = protocol.ConfigProblem{File: e.File, Server: e.Server, Key: e.Key, Line: e.Line, Column: e.Column, Message: e.Message}
	}
	return out
}

func originOf(s config.Source) protocol.ConfigOrigin {
	return protocol.ConfigOrigin{Path: s.Path, Tool: s.Tool, Scope: s.Scope, Project: s.Project}
}

// configReport is initialize's account of l.
func configReport(l *config.Loaded) protocol.ConfigReport {
	r := protocol.ConfigReport{
		Sources:  []protocol.ConfigSource{},
		Errors:   problemsOf(l.Errors),
		Warnings: problemsOf(l.Warnings),
		Replaced: []protocol.ConfigReplacement{},
	}
	for _, s := range l.Sources {
		r.Sources = append(r.Sources, protocol.ConfigSource{
			Path: s.Path, Tool: s.Tool, Scope: s.Scope, Project: s.Project, Servers: append([]string{}, s.Servers...),
			Untrusted: s.Untrusted,
		})
	}
	for _, u := range l.Untrusted {
		r.Untrusted = append(r.Untrusted, protocol.ConfigUntrusted{Server: u.Server, Source: originOf(u.Source), Reason: u.Reason, Declined: u.Declined})
	}
	for _, rp := range l.Replaced {
		r.Replaced = append(r.Replaced, protocol.ConfigReplacement{Server: rp.Server, By: originOf(rp.By), Over: originOf(rp.Over)})
	}
	return r
}

// invalidError is the error of a request that needs an invalid server.
func invalidError(name string, cfg *config.ServerConfig) *protocol.Error {
	return protocol.NewError(protocol.CodeServerNotReady, protocol.KindServerNotReady,
		fmt.Sprintf("server %q is not started: its configuration has errors (%s)", name, cfg.Problems.Error())).WithServer(name, "")
}

// approvalOf is the approval configuration of cfg for servers/status.
func approvalOf(cfg *config.ServerConfig) *protocol.ServerApproval {
	a := &protocol.ServerApproval{Default: cfg.DefaultToolsApprovalMode}
	for tool, tc := range cfg.Tools {
		if tc.ApprovalMode == "" {
			continue
		}
		if a.Tools == nil {
			a.Tools = map[string]string{}
		}
		a.Tools[tool] = tc.ApprovalMode
	}
	if a.Default == "" && a.Tools == nil {
		return nil
	}
	return a
}
