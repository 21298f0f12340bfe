package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// clientOptions builds the MCP connection options of sc. Handlers run on
// go-sdk's notification goroutine and must not block: they only forward
// (writes to the host are short) or record.
func (sc *serverConn) clientOptions() mcpclient.Options {
	sess := sc.sess
	srv := sess.srv
	env := sess.env
	opts := mcpclient.Options{
		Name:           sc.name,
		Config:         sc.cfg,
		FallbackCwd:    sess.fallbackCwd(sc.cfg),
		Env:            srv.opts.Env,
		ClientInfo:     &mcp.Implementation{Name: srv.opts.Name, Version: srv.opts.Version},
		Elicitation:    env.hostCaps.Elicitation.Form,
		ElicitationURL: env.hostCaps.Elicitation.URL,
		Roots:          env.hostCaps.Roots.Enabled,
		Extensions:     env.hostCaps.Extensions,
		Sampling:       env.hostCaps.Sampling.Enabled,
		SamplingTools:  env.hostCaps.Sampling.Tools,
		// What the connection logs may quote the server (its stderr, its
		// errors): the server's secrets are scrubbed from it.
		Logger: slog.New(redact.Handler(srv.logger.Handler(), sc.secrets())).With("server", sc.name, "session", sess.id),
		// Its stderr is scrubbed as it is read, across the reader's chunks.
		Secrets: sc.secrets(),

		// A large message's memory goes back to the OS, whether or not
		// it reaches the host as a large frame (a result cut to its
		// limit does not).
		MessageSize: srv.mem.Note,

		MaxServerRequests: env.maxServerRequests,
		Reaper:            srv.opts.Reaper,
		Background:        sc.background,
		Subscriptions:     sc.subscriptions,
	}
	// A new connection starts its count of skipped stdout lines afresh.
	sc.mu.Lock()
	sc.skipped, sc.firstSkipped = 0, ""
	sc.mu.Unlock()
	// The host hears of the connection's prompts and resources changes
	// through a queue of their own (listnotices.go).
	lists := newListQueue(sc)
	opts.Handlers = mcpclient.Handlers{
		Progress: func(p *mcp.ProgressNotificationParams) {
			sc.mu.Lock()
			tok, ok := sc.progress[progressKeyOf(p.ProgressToken)]
			sc.mu.Unlock()
			if !ok {
				return // not a token of a call in flight: never forward it
			}
			v := protocol.ProgressValue{Progress: p.Progress, Message: p.Message}
			if p.Total != 0 {
				total := p.Total
				v.Total = &total
			}
			srv.notify(protocol.NotifyProgress, protocol.ProgressParams{Token: tok, Value: v})
		},
		Log: func(p *mcp.LoggingMessageParams) {
			data, err := json.Marshal(p.Data)
			if err != nil {
				data = json.RawMessage(`null`)
			}
			srv.logServerRaw(sess.id, sc.name, string(p.Level), data)
		},
		StderrLine: func(line string) {
			srv.logServer(sess.id, sc.name, "stderr", line)
		},
		SkippedLine: func(line string) {
			// Scrubbed before it is cut or quoted, which could hide a
			// secret from the scrubber.
			line = sc.secrets().String(line)
			sc.mu.Lock()
			if sc.skipped == 0 {
				sc.firstSkipped = clipLine(line, maxSkippedLine)
			}
			sc.skipped++
			sc.mu.Unlock()
			srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("non-JSON line on stdout skipped: %.200q", line))
		},
		ServerRequestRefused: func(method string, limit int) {
			srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("%s from server %q refused: %d requests of it already wait for the host (limits.maxServerRequests)", method, sc.name, limit))
		},
		HostAnswerRefused: func(method string, why error) {
			srv.logServer(sess.id, sc.name, "warning", fmt.Sprintf("the host's answer to %s of server %q was not sent to it: %v; the server got a JSON-RPC error instead", method, sc.name, why))
		},
		ElicitationComplete: func(id string) {
			srv.notify(protocol.NotifyElicitationComplete, protocol.ElicitationCompleteParams{SessionID: sess.id, Server: sc.name, ElicitationID: id})
		},
		ResourceUpdated:   sc.onResourceUpdated,
		ResubscribeFailed: sc.resubscribeFailed,
		TaskStatus:        sc.onTaskStatus,
		ToolListChanged:   sc.onToolListChanged,
		ResourceListChanged: func() {
			sc.mu.Lock()
			sc.resourceGen++
			sc.mu.Unlock()
			lists.add(protocol.ListResources)
		},
		PromptListChanged: func() { lists.add(protocol.ListPrompts) },
	}
	if env.hostCaps.Elicitation.Any() {
		opts.Handlers.Elicit = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return hostAnswer(srv.callHost(ctx, protocol.RequestElicit, protocol.ElicitParams{SessionID: sess.id, Server: sc.name, Params: params}))
		}
	}
	if env.hostCaps.Sampling.Enabled {
		opts.Handlers.Sample = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
			return hostAnswer(srv.callHost(ctx, protocol.RequestSample, protocol.SampleParams{SessionID: sess.id, Server: sc.name, Params: params}))
		}
	}
	if env.hostCaps.Roots.Enabled {
		opts.Handlers.ListRoots = func(ctx context.Context) (json.RawMessage, error) {
			return hostAnswer(srv.callHost(ctx, protocol.RequestRoots, protocol.RootsParams{SessionID: sess.id, Server: sc.name}))
		}
	}
	return opts
}

// hostAnswer is the host's answer to a relayed request as the MCP client
// hands it to the server: an error the host answered keeps its code and
// message (mcpclient answers a *ServerError as that JSON-RPC error).
func hostAnswer(raw json.RawMessage, err error) (json.RawMessage, error) {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return nil, &mcpclient.ServerError{Code: pe.Code, Message: pe.Message}
	}
	return raw, err
}

// logServer sends an mcp/log with a string payload.
func (s *Server) logServer(sessionID, server, level, msg string) {
	data, _ := json.Marshal(msg)
	s.logServerRaw(sessionID, server, level, data)
}

// logServerRaw sends an mcp/log, rate-limited per server so that a server
// flooding stderr or log notifications cannot flood the host.
func (s *Server) logServerRaw(sessionID, server, level string, data json.RawMessage) {
	key := sessionID + "\x00" + server
	dropped, send := s.logLimiter.admit(key, s.now())
	if dropped > 0 {
		note, _ := json.Marshal(fmt.Sprintf("%d log lines of server %q dropped (rate limit)", dropped, server))
		s.notify(protocol.NotifyLog, protocol.LogParams{SessionID: sessionID, Server: server, Level: "warning", Data: note})
	}
	if !send {
		return
	}
	if server != "" {
		// Whatever a server's log carries may quote the server.
		data = s.serverSecrets(s.environment(), server).JSON(data)
	}
	s.logger.Debug("server log", "session", sessionID, "server", server, "level", level, peerlog.Bytes("data", data))
	s.notify(protocol.NotifyLog, protocol.LogParams{SessionID: sessionID, Server: server, Level: level, Data: data})
}

// logLimiter bounds the mcp/log messages of each key (a session's server):
// a token bucket per key, of which every message takes one, the notices
// of dropped lines included.
type logLimiter struct {
	mu      sync.Mutex
	rate    rate.Limit // messages per second
	burst   int
	buckets map[string]*logBucket
}

type logBucket struct {
	lim     *rate.Limiter
	dropped int // lines dropped since the last notice
}

func newLogLimiter(perSecond float64, burst int) *logLimiter {
	return &logLimiter{rate: rate.Limit(perSecond), burst: burst, buckets: map[string]*logBucket{}}
}

// forgetSession drops the buckets of a closed session.
func (l *logLimiter) forgetSession(sessionID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key := range l.buckets {
		if strings.HasPrefix(key, sessionID+"\x00") {
			delete(l.buckets, key)
		}
	}
}

// admit decides what one more line of key sends at now: a notice of the
// lines dropped before it (dropped > 0), and the line itself (send). The
// notice takes a token like any message, so a key never gets more than
// its rate (after the burst), notices included; a line that finds the
// only token taken by the notice is dropped and counted in the next one.
func (l *logLimiter) admit(key string, now time.Time) (dropped int, send bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		b = &logBucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.buckets[key] = b
	}
	if !b.lim.AllowN(now, 1) {
		b.dropped++
		return 0, false
	}
	if b.dropped == 0 {
		return 0, true
	}
	dropped, b.dropped = b.dropped, 0
	if b.lim.AllowN(now, 1) {
		return dropped, true
	}
	b.dropped = 1
	return dropped, false
}

// maxSkippedLine bounds the first skipped stdout line kept for
// servers/status.
const maxSkippedLine = 200

// clipLine cuts s to at most n bytes at a rune boundary.
func clipLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
