package peoplecli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// host is an in-process sidecar and the host client speaking to it: the
// host protocol over two pipes, exactly the bytes a harness would send.
type host struct {
	client    *hostclient.Client
	serveDone chan struct{}
	// log prints the sidecar's warnings for people.
	log *peopleLog
	// words, if set, rewrites the sidecar's messages for this command
	// line (a config key that a flag overrides).
	words *strings.Replacer

	mu       sync.Mutex
	handlers []func(hostclient.Notification)
}

// startHost starts sidecar.Serve in a goroutine it owns; close stops it.
// The sidecar logs warnings and errors to logOut. onRequest (may be nil)
// answers the sidecar's requests. startupTimeout, when positive, replaces
// every server's startup_timeout_sec (--startup-timeout).
func startHost(ctx context.Context, env Env, logOut io.Writer, onRequest func(ctx context.Context, method string, params json.RawMessage) (any, error), startupTimeout time.Duration) *host {
	hostR, sidecarW := io.Pipe() // sidecar -> host
	sidecarR, hostW := io.Pipe() // host -> sidecar
	h := &host{serveDone: make(chan struct{}), log: newPeopleLog(logOut)}
	if startupTimeout > 0 {
		// The sidecar names the config key; the bound is the flag's.
		h.words = strings.NewReplacer("startup_timeout_sec", "--startup-timeout")
	}
	go func() {
		defer close(h.serveDone)
		sidecar.Serve(ctx, sidecarR, sidecarW, sidecar.Options{
			Version:        env.Version,
			Env:            env.LookupEnv,
			Logger:         slog.New(h.log),
			InlineSource:   commandLine,
			StartupTimeout: startupTimeout,
		})
		// Serve closed its stream (and so both pipe ends it holds); this
		// is for the host's reader should that ever change.
		sidecarW.Close()
	}()
	h.client = hostclient.New(ctx, hostR, hostW, hostclient.Options{OnNotification: h.dispatch, OnRequest: onRequest, Checker: env.Checker})
	return h
}

// onNotification adds a handler; handlers run on the read loop, in
// arrival order, and must not block.
func (h *host) onNotification(f func(hostclient.Notification)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handlers = append(h.handlers, f)
}

func (h *host) dispatch(n hostclient.Notification) {
	h.mu.Lock()
	hs := h.handlers
	h.mu.Unlock()
	for _, f := range hs {
		f(n)
	}
}

// call sends one request. Its error is the sidecar's message, which is
// written for people, without the method or the error's code: callers say
// what they were doing in words.
func (h *host) call(ctx context.Context, method string, params, result any) error {
	if err := h.client.Call(ctx, method, params, result); err != nil {
		err = describeRPCError(err)
		var re *rpcError
		if errors.As(err, &re) {
			re.msg = h.say(re.msg)
		}
		return err
	}
	return nil
}

// say is a message of the sidecar in this command line's words.
func (h *host) say(msg string) string {
	if h.words == nil {
		return msg
	}
	return h.words.Replace(msg)
}

// initialize sends initialize and initialized.
func (h *host) initialize(ctx context.Context, p map[string]any) (protocol.InitializeResult, error) {
	var res protocol.InitializeResult
	if err := h.call(ctx, protocol.MethodInitialize, p, &res); err != nil {
		return res, err
	}
	return res, h.client.Notify(ctx, protocol.MethodInitialized, map[string]any{})
}

// close shuts the sidecar down as a harness does (shutdown, exit), which
// ends every server process, and waits for Serve to return. If ctx is
// already done, Serve has stopped on its own.
func (h *host) close(ctx context.Context) {
	if ctx.Err() == nil {
		_ = h.client.Call(ctx, protocol.MethodShutdown, nil, nil)
		_ = h.client.Notify(ctx, protocol.MethodExit, nil)
	}
	<-h.serveDone
	h.client.Close()
}

// describeRPCError keeps the sidecar's message, which is written for
// people; the code and kind stay in the error for the commands, out of
// what people read (docs/cli.md).
func describeRPCError(err error) error {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err
	}
	re := &rpcError{code: pe.Code, kind: pe.Data.Kind, msg: pe.Message}
	if pe.Data.ServerCode != nil {
		re.serverCode = *pe.Data.ServerCode
	}
	return re
}

type rpcError struct {
	code int64
	kind string
	msg  string
	// serverCode is the server's own JSON-RPC code, for a server_error.
	serverCode int64
}

func (e *rpcError) Error() string { return e.msg }

// commandLine names, in messages, the server a person gave with --command
// or --url, where a host's inline servers are "initialize".
const commandLine = "the command line"
