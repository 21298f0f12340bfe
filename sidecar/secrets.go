package sidecar

import (
	"bytes"
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

// scrubErrorResult is raw, a tools/call result, with sc's secrets replaced
// when it is an error result (isError true): its text is the server's
// words about what failed, which may quote what it was sent, as an error
// message may. Any other result is the tool's data and goes as it came,
// unread but for a search for the member's name.
func (sc *serverConn) scrubErrorResult(raw []byte) []byte {
	return scrubErrorResult(sc.secrets(), raw)
}

// scrubErrorResult is sc.scrubErrorResult with the secrets sec.
func scrubErrorResult(sec *redact.Secrets, raw []byte) []byte {
	if !isErrorResult(raw) {
		return raw
	}
	return sec.JSON(raw)
}

// isErrorResult reports whether raw, a JSON object, has a member
// "isError" that is true, at any depth (a key of structuredContent too:
// then it is scrubbed for nothing). In valid JSON, "isError" followed by
// a colon can only be a key: a string's quotes inside another are escaped.
func isErrorResult(raw []byte) bool {
	key := []byte(`"isError"`)
	for {
		i := bytes.Index(raw, key)
		if i < 0 {
			return false
		}
		raw = raw[i+len(key):]
		rest := bytes.TrimLeft(raw, " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' && bytes.HasPrefix(bytes.TrimLeft(rest[1:], " \t\r\n"), []byte("true")) {
			return true
		}
	}
}
