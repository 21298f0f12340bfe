package sidecar

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/headerhelper"
)

// What a connection is given besides its configuration: the whole
// environment, for a stdio server of a tool that gives its servers theirs
// (Claude Code, Cursor, VS Code; config.ChildEnv), and the headers a
// header helper computes (headersHelper, http_headers_helper).

// environ is the sidecar's whole environment (Options.Environ).
func (s *Server) environ() []string {
	if s.opts.Environ != nil {
		return s.opts.Environ()
	}
	return os.Environ()
}

// connConfig is the configuration one connection of sc starts with: sc's,
// with the whole environment for a server whose tool passes it. It is a
// copy: sc.cfg is shared and never changes.
func (sc *serverConn) connConfig() *config.ServerConfig {
	cfg := sc.cfg
	if cfg.InheritEnv && cfg.Transport() == config.TransportStdio {
		cp := *cfg
		cp.Environ = sc.sess.srv.environ()
		cfg = &cp
	}
	return cfg
}

// helperEnv is a header helper's environment: the sidecar's whole
// environment, as Claude Code and Codex run their helpers with theirs
// (a cloud CLI needs its own variables), and the server's name and URL
// under the names Claude Code gives them, so that one script can serve
// several servers.
func (sc *serverConn) helperEnv(cfg *config.ServerConfig) []string {
	env := slices.DeleteFunc(slices.Clone(sc.sess.srv.environ()), func(kv string) bool {
		return strings.HasPrefix(kv, "CLAUDE_CODE_MCP_SERVER_NAME=") || strings.HasPrefix(kv, "CLAUDE_CODE_MCP_SERVER_URL=")
	})
	return append(env, "CLAUDE_CODE_MCP_SERVER_NAME="+sc.name, "CLAUDE_CODE_MCP_SERVER_URL="+cfg.URL)
}

// dynamicHeaders is mcpclient.Options.DynamicHeaders of one connection of
// sc, whose configuration has a header helper: the helper runs at the
// connection's first request and again when the server answered 401
// (refresh), one run at a time; between runs the headers it gave last
// are used. Their values join the server's secrets before they are
// returned, so nothing the connection logs can show them.
func (sc *serverConn) dynamicHeaders(cfg *config.ServerConfig) func(ctx context.Context, refresh bool) (http.Header, error) {
	var (
		mu   sync.Mutex
		last http.Header
	)
	return func(ctx context.Context, refresh bool) (http.Header, error) {
		mu.Lock()
		defer mu.Unlock()
		if last != nil && !refresh {
			return last.Clone(), nil
		}
		h, err := headerhelper.Run(ctx, headerhelper.Spec{
			Command: cfg.HTTPHeadersHelper,
			Dir:     cfg.Dir,
			Env:     sc.helperEnv(cfg),
			Timeout: cfg.HeadersHelperTimeout(),
		})
		if err != nil {
			// mcpclient names the server.
			return nil, err
		}
		sc.sess.env.helperSecrets.add(sc.name, headerhelper.Values(h))
		last = h
		return h.Clone(), nil
	}
}

// helperSecrets are the values header helpers gave each server of an
// environment, every one ever given (a refreshed token does not make the
// old one harmless to show), up to maxHelperSecrets a server.
type helperSecrets struct {
	mu sync.Mutex
	m  map[string][]string
}

// maxHelperSecrets bounds the values kept per server: a helper that
// gives a new token at each 401 must not grow the scrubber without end.
// The oldest go first.
const maxHelperSecrets = 256

func (h *helperSecrets) add(server string, values []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string][]string{}
	}
	vals := h.m[server]
	for _, v := range values {
		if !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	if n := len(vals) - maxHelperSecrets; n > 0 {
		vals = slices.Delete(vals, 0, n)
	}
	h.m[server] = vals
}

func (h *helperSecrets) of(server string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.m[server])
}

// withEnvHint adds to a startup failure's message what the server's
// stderr says it lacks and how to pass it (config.MissingVariableHint),
// before its stderr tail.
func (sc *serverConn) withEnvHint(cfg *config.ServerConfig, msg string) string {
	head, tail, hasTail := strings.Cut(msg, "; stderr:\n")
	if !hasTail {
		return msg
	}
	hint := config.MissingVariableHint(cfg, tail, sc.sess.srv.opts.Env)
	if hint == "" {
		return msg
	}
	return head + "; " + hint + "; stderr:\n" + tail
}
