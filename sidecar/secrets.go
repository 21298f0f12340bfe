package sidecar

import (
	"errors"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
	"github.com/mcp-sidecar/mcp-sidecar/oauth"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// A server's error message, stderr line or log notification may quote
// what the server was sent: its bearer token, a header, a token in its
// URL, a value of its environment. Everything a server writes passes
// through its redact.Secrets on its way to the host or a log: the errors
// of requests (callError) and of startups (start), lastError, mcp/log
// (logServerRaw) and the logs of its connection (clientOptions).

// scrubbers holds the redact.Secrets of the servers of one environment,
// each made at its first use.
type scrubbers struct {
	mu sync.Mutex
	m  map[string]*redact.Secrets
}

// serverSecrets is what is scrubbed from the text server of env writes:
// the secrets its configuration gives it (redact.ServerValues, read from
// the sidecar's environment), the values given for its VS Code inputs,
// the headers its header helper gave and, for a server that uses OAuth, the tokens the sidecar holds for it as
// they are at each use. Nil for a server env does not know.
func (s *Server) serverSecrets(env *environment, server string) *redact.Secrets {
	if env == nil {
		return nil
	}
	cfg, ok := env.servers[server]
	if !ok {
		return nil
	}
	env.scrub.mu.Lock()
	defer env.scrub.mu.Unlock()
	if sec, ok := env.scrub.m[server]; ok {
		return sec
	}
	var tokens func() []string
	if srv, ok, _ := oauth.ServerFor(cfg, s.opts.Env); ok && env.auth != nil {
		tokens = func() []string { return env.auth.Secrets(srv) }
	}
	// What changes while the server runs: its OAuth tokens, the headers
	// its header helper gives.
	dynamic := func() []string {
		var vals []string
		if tokens != nil {
			vals = tokens()
		}
		vals = append(vals, env.inputs.of(cfg)...)
		return append(vals, env.helperSecrets.of(server)...)
	}
	sec := redact.NewSecrets(redact.ServerValues(cfg, s.opts.Env), dynamic)
	if env.scrub.m == nil {
		env.scrub.m = map[string]*redact.Secrets{}
	}
	env.scrub.m[server] = sec
	return sec
}

// secrets is serverSecrets of sc.
func (sc *serverConn) secrets() *redact.Secrets {
	return sc.sess.srv.serverSecrets(sc.sess.env, sc.name)
}

// scrubbed is err with sc's secrets replaced in the message, stderr tail
// and server data of a *protocol.Error (a copy: the original may be
// shared). Other errors, and needs_authorization, whose message is the
// sidecar's own and carries the authorization URL to open (which names
// the server's URL, as the authorization server must see it), pass as
// they are.
func (sc *serverConn) scrubbed(err error) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Data.Kind == protocol.KindNeedsAuthorization {
		return err
	}
	sec := sc.secrets()
	cp := *pe
	cp.Message = sec.String(pe.Message)
	cp.Data.Stderr = sec.String(pe.Data.Stderr)
	cp.Data.ServerData = sec.JSON(pe.Data.ServerData)
	return &cp
}
