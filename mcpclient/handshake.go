package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// handshake agrees on a protocol with the server (MCP 2026-07-28,
// "Versioning and Compatibility", and the transports' "Backward
// Compatibility"):
//
//   - protocol_version set: 2026-07-28 (or later) is modern only, no
//     fallback; an older version is the initialize handshake of that
//     version, no probe.
//   - otherwise the modern protocol first: server/discover, its _meta
//     naming 2026-07-28. A DiscoverResult makes the connection modern; an
//     UnsupportedProtocolVersionError (-32022) is answered with a version
//     of its supported list; any other error, or no answer within the
//     probe's bound (stdio), makes it legacy: initialize 2025-11-25. A
//     stdio server that exited on the probe (some do) is started again
//     and goes straight to initialize; over HTTP the fallback takes a
//     fresh go-sdk connection.
//   - Options.Era, what an earlier connection learnt: legacy skips the
//     probe, and a hint that proves wrong is probed again, once; modern
//     changes nothing (the probe keeps its bound).
func (c *Conn) handshake(ctx context.Context) error {
	switch v := c.opts.Config.ProtocolVersion; {
	case v >= ModernProtocolVersion:
		return c.discover(ctx, v, false)
	case v != "":
		return c.initialize(ctx, v)
	}
	if c.opts.Era == EraLegacy || !modernByDefault {
		err := c.initialize(ctx, DefaultProtocolVersion)
		if err == nil || !c.wrongEra(ctx, err) {
			return err
		}
		c.opts.Logger.Info("server no longer takes initialize: probing it again", "server", c.name, peerlog.Err("err", err))
		return c.reprobe(ctx, err)
	}
	// A modern hint does not lift the probe's bound: a server that went
	// back to a legacy version and ignores server/discover would hold the
	// whole startup.
	err := c.discover(ctx, ModernProtocolVersion, true)
	var legacy *legacyServer
	if !errors.As(err, &legacy) {
		return err
	}
	c.opts.Logger.Debug("server is not modern: initialize", "server", c.name, "why", legacy.why)
	version := legacy.version
	if version == "" {
		version = DefaultProtocolVersion
	}
	return c.fallBack(ctx, version)
}

// startupCall is a request of the handshake: it also ends when the
// connection does (the process exits, its output or the HTTP connection
// ends), which during startup nobody else watches.
func (c *Conn) startupCall(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-c.readEnded:
			if c.proc == nil && c.readErr != nil {
				cancel(fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, c.readErr))
			} else {
				cancel(fmt.Errorf("server %q: %w: its output ended", c.name, ErrConnectionLost))
			}
		case <-exited:
			cancel(fmt.Errorf("server %q: %w: it exited", c.name, ErrConnectionLost))
		case <-c.writeFailed:
			cancel(fmt.Errorf("server %q: %w: %w", c.name, ErrConnectionLost, c.writeErr))
		case <-stop:
		}
	}()
	res, err := c.w.callOn(ctx, nil, method, params)
	if err != nil && ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != ctx.Err() {
			return nil, cause
		}
	}
	return res, err
}

// initialize runs the legacy handshake: initialize with version, then
// notifications/initialized.
func (c *Conn) initialize(ctx context.Context, version string) error {
	c.setEra(EraLegacy)
	c.meta = nil
	c.capsRaw = c.capabilities(version, false)
	params, err := marshalNoEscape(struct {
		Capabilities    json.RawMessage     `json:"capabilities"`
		ClientInfo      *mcp.Implementation `json:"clientInfo"`
		ProtocolVersion string              `json:"protocolVersion"`
	}{c.capsRaw, c.opts.ClientInfo, version})
	if err != nil {
		return fmt.Errorf("server %q: initialize: %w", c.name, err)
	}
	raw, err := c.startupCall(ctx, "initialize", params)
	if err != nil {
		return err
	}
	if err := c.opened(raw); err != nil {
		return err
	}
	if !slices.Contains(legacyVersions, c.protocol) {
		if c.protocol >= ModernProtocolVersion {
			return fmt.Errorf("server %q answered initialize with protocol version %q, which has no initialize handshake: it does not follow the protocol it names", c.name, c.protocol)
		}
		return fmt.Errorf("server %q answered initialize with protocol version %q, which this client does not speak (it speaks %s and %s)", c.name, c.protocol, ModernProtocolVersion, legacyVersions)
	}
	if c.http != nil {
		c.http.legacySession(c.protocol)
	}
	if err := c.w.notify(ctx, "notifications/initialized", json.RawMessage(`{}`)); err != nil {
		return err
	}
	if c.http != nil && c.http.transport != nil {
		// A Streamable HTTP session (not SSE, whose one stream is open):
		// renewed with these params, and its standalone GET stream.
		c.http.initParams = params
		c.startGetStream()
	}
	return nil
}

// opened reads the result that opened the connection (initialize's, or
// server/discover's): capabilities, protocol version, server info,
// instructions.
func (c *Conn) opened(raw json.RawMessage) error {
	var r struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
		Meta            struct {
			ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("server %q: the result that opened the connection does not parse: %w", c.name, err)
	}
	c.initRaw = raw
	c.caps = r.Capabilities
	if len(c.caps) == 0 || string(c.caps) == "null" {
		c.caps = json.RawMessage("{}")
	}
	var caps struct {
		Experimental map[string]json.RawMessage `json:"experimental"`
	}
	if err := json.Unmarshal(c.caps, &caps); err != nil {
		return fmt.Errorf("server %q: its capabilities are not an object: %w", c.name, err)
	}
	c.experimental = caps.Experimental
	c.protocol = r.ProtocolVersion
	c.instructions = r.Instructions
	c.serverInfo = nil
	for _, info := range []json.RawMessage{r.ServerInfo, r.Meta.ServerInfo} {
		var impl mcp.Implementation
		if len(info) > 0 && json.Unmarshal(info, &impl) == nil && impl.Name != "" {
			c.serverInfo = &impl
		}
	}
	return nil
}

// capabilities is the client's capabilities object for version: each only
// when the host handles it, in MCP's object shapes; with tasks, the tasks
// extension too (modern versions).
func (c *Conn) capabilities(version string, tasks bool) json.RawMessage {
	caps := map[string]json.RawMessage{}
	if c.opts.Roots {
		caps["roots"] = json.RawMessage(`{}`)
	}
	// Before 2025-11-25 there is only form elicitation, advertised as {}.
	modes := version >= "2025-11-25"
	if c.opts.Elicitation || (c.opts.ElicitationURL && modes) {
		e := map[string]json.RawMessage{}
		if modes && c.opts.Elicitation {
			e["form"] = json.RawMessage(`{}`)
		}
		if modes && c.opts.ElicitationURL {
			e["url"] = json.RawMessage(`{}`)
		}
		caps["elicitation"], _ = marshalNoEscape(e)
	}
	if c.opts.Sampling {
		s := json.RawMessage(`{}`)
		if c.opts.SamplingTools {
			s = json.RawMessage(`{"tools":{}}`)
		}
		caps["sampling"] = s
	}
	if version >= ModernProtocolVersion && (len(c.opts.Extensions) > 0 || tasks) {
		ext := maps.Clone(c.opts.Extensions)
		if tasks {
			if ext == nil {
				ext = map[string]json.RawMessage{}
			}
			if _, ok := ext[TasksExtension]; !ok {
				ext[TasksExtension] = json.RawMessage(`{}`)
			}
		}
		caps["extensions"], _ = marshalNoEscape(ext)
	}
	out, _ := marshalNoEscape(caps)
	return out
}

// modernByDefault: a server whose config sets no protocol_version is
// probed for the modern protocol first.
const modernByDefault = true

// legacyServer is the error of a probe that found a legacy server: why,
// and the version to ask for in initialize ("" for the default).
type legacyServer struct {
	why     error
	version string
}

func (e *legacyServer) Error() string { return "legacy server: " + e.why.Error() }

// defaultProbeWait bounds the wait for a stdio server's answer to the
// server/discover probe: a server that has not answered by then is taken
// as legacy (2025-11-25 servers may ignore a request before initialize),
// and is sent initialize on the same process. It is long, because the wait
// starts as the process starts: a server slow to start (npx fetching a
// package, a virtual environment loading) must not be taken for legacy
// because it was slow; a server that ignores the probe costs it once, as
// the sidecar keeps the era it learnt (Options.Era). It is cut to half the
// startup's time left, so that initialize has the other half.
const defaultProbeWait = 10 * time.Second

// The modern errors that tell a modern server (JSON-RPC codes of MCP
// 2026-07-28): its answer is not a reason to fall back.
const (
	codeHeaderMismatch          = -32020
	codeMissingClientCapability = -32021
	codeUnsupportedVersion      = -32022
)

// discover opens a modern connection of version with server/discover. With
// probe, an answer that says the server is not modern is a *legacyServer
// error (the caller falls back); otherwise it is the connection's error.
func (c *Conn) discover(ctx context.Context, version string, probe bool) error {
	pinned := c.opts.Config.ProtocolVersion != ""
	for attempt := 0; ; attempt++ {
		c.useModern(version)
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if probe && c.proc != nil {
			pctx, cancel = context.WithTimeout(context.WithValue(ctx, quietKey{}, true), c.probeWait(ctx))
		}
		raw, err := c.startupCall(pctx, "server/discover", c.withMeta(nil))
		timedOut := pctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			err = c.discovered(version, raw, pinned)
			var legacy *legacyServer
			if errors.As(err, &legacy) && legacy.version == "" && !probe {
				return fmt.Errorf("server %q: %w", c.name, legacy.why)
			}
			return err
		}
		var se *ServerError
		switch {
		case timedOut:
			return &legacyServer{why: fmt.Errorf("no answer to server/discover within %s", c.probeWait(ctx))}
		case errors.As(err, &se) && se.Code == codeUnsupportedVersion:
			next, ok := pickVersion(se.Data)
			switch {
			case attempt == 0 && ok && next >= ModernProtocolVersion && (!pinned || next == version):
				version = next
				continue // once, with a version the server named
			case !pinned && ok && next < ModernProtocolVersion:
				return &legacyServer{why: fmt.Errorf("server/discover: the server supports %s", next), version: next}
			}
			return fmt.Errorf("server %q does not support protocol version %s (it answered %s; this client speaks %s and %s): %w",
				c.name, version, orMissing(se.Data), ModernProtocolVersion, legacyVersions, err)
		case errors.As(err, &se) && (se.Code == codeHeaderMismatch || se.Code == codeMissingClientCapability):
			return err // a modern server that refused the request itself
		case errors.Is(err, ErrMalformedResult):
			// An answer, not an error: no legacy server answers
			// server/discover with a result, and a broken one is not
			// talked to.
			return err
		case ctx.Err() != nil, errors.Is(err, ErrUnreachable), errors.Is(err, ErrRedirectRefused), errors.Is(err, ErrMessageTooLarge), c.authRefused():
			return err // no other request would fare better
		case probe:
			return &legacyServer{why: err}
		}
		return err
	}
}

// pickVersion picks the version to ask for from an
// UnsupportedProtocolVersionError's data: the modern version this client
// speaks if the server supports it, else the newest legacy one.
func pickVersion(data json.RawMessage) (string, bool) {
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(data, &d) != nil {
		return "", false
	}
	if slices.Contains(d.Supported, ModernProtocolVersion) {
		return ModernProtocolVersion, true
	}
	for _, v := range legacyVersions {
		if slices.Contains(d.Supported, v) {
			return v, true
		}
	}
	return "", false
}

// probeWait is the bound of the stdio probe's wait, given ctx.
func (c *Conn) probeWait(ctx context.Context) time.Duration {
	d := c.opts.probeWait
	if d <= 0 {
		d = defaultProbeWait
	}
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)/2)
	}
	return d
}

// useModern makes the connection a modern one of version: every request
// carries version, the client's identity and capabilities in _meta.
func (c *Conn) useModern(version string) {
	c.setEra(EraModern)
	c.protocol = version
	c.capsRaw = c.capabilities(version, false)
	c.meta = c.modernMeta(version, c.capsRaw)
	c.taskMeta = c.modernMeta(version, c.capabilities(version, true))
}

// modernMeta is the _meta members of a modern request that declares caps.
func (c *Conn) modernMeta(version string, caps json.RawMessage) []byte {
	info, _ := marshalNoEscape(c.opts.ClientInfo)
	var b bytes.Buffer
	b.WriteString(`"io.modelcontextprotocol/clientCapabilities":`)
	b.Write(caps)
	b.WriteString(`,"io.modelcontextprotocol/clientInfo":`)
	b.Write(info)
	// Servers send notifications/message only for a request that names a
	// level (2026-07-28): every level, as a legacy server that was never
	// sent logging/setLevel does, for mcp/log to pass on.
	b.WriteString(`,"io.modelcontextprotocol/logLevel":"debug"`)
	b.WriteString(`,"io.modelcontextprotocol/protocolVersion":`)
	b.Write(jsonString(version))
	return b.Bytes()
}

// discovered takes a DiscoverResult: the version must be one the server
// supports.
func (c *Conn) discovered(version string, raw json.RawMessage, pinned bool) error {
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("server %q answered server/discover with %s, not a DiscoverResult (supportedVersions, capabilities): %w", c.name, clipJSON(raw), ErrMalformedResult)
	}
	if r.SupportedVersions == nil {
		// Some servers of 2025-11-25 answer every method they do not know
		// with an empty result (the official conformance suite's mocks
		// do): no DiscoverResult, so not a modern server.
		return &legacyServer{why: fmt.Errorf("server/discover answered %s, without supportedVersions", clipJSON(raw))}
	}
	if !slices.Contains(r.SupportedVersions, version) {
		switch {
		case !pinned && slices.Contains(r.SupportedVersions, ModernProtocolVersion):
			c.useModern(ModernProtocolVersion)
			version = ModernProtocolVersion
		case !pinned && slices.ContainsFunc(legacyVersions, func(v string) bool { return slices.Contains(r.SupportedVersions, v) }):
			// A server that answers server/discover but offers only
			// versions of the initialize handshake (go-sdk's stateful HTTP
			// server does): the newest of them, by initialize.
			for _, v := range legacyVersions {
				if slices.Contains(r.SupportedVersions, v) {
					return &legacyServer{why: fmt.Errorf("server/discover: the server supports %q", r.SupportedVersions), version: v}
				}
			}
		default:
			return fmt.Errorf("server %q supports protocol versions %q, not %s (this client speaks %s and %s)", c.name, r.SupportedVersions, version, ModernProtocolVersion, legacyVersions)
		}
	}
	if err := c.opened(raw); err != nil {
		return err
	}
	c.protocol = version
	c.newListener()
	return nil
}

// clipJSON is a JSON text for a message, cut short.
func clipJSON(raw json.RawMessage) string {
	if len(raw) > 80 {
		return string(raw[:80]) + "..."
	}
	return string(raw)
}

// authRefused reports whether the server refused the client's
// authorization (401, 403) on the last request: falling back would ask
// for it again.
func (c *Conn) authRefused() bool {
	return c.http != nil && c.http.rt.refusedAuth()
}

// wrongEra reports whether the failure of a legacy-hinted initialize may
// be the server's change of era (the hint is what an earlier connection
// found, kept on disk): an answer that refuses it (a JSON-RPC error, also
// in the body of an HTTP error status), or a stdio server that died of
// it, as some die of a request they do not know. Not a timeout: a server
// slow to start cannot be told from one that ignores initialize, and a
// legacy server that answers late must not be sent server/discover after
// initialize. Nor a refusal of the client's authorization, or a server
// that cannot be reached: no other request would fare better.
func (c *Conn) wrongEra(ctx context.Context, err error) bool {
	if ctx.Err() != nil || c.authRefused() || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrRedirectRefused) || errors.Is(err, ErrMessageTooLarge) {
		return false
	}
	var se *ServerError
	return errors.As(err, &se) || c.proc != nil && errors.Is(err, ErrConnectionLost)
}

// reprobe runs the modern handshake after a legacy-hinted initialize that
// failed as wrongEra says: on a new process if the server died of
// initialize, on a fresh go-sdk connection over HTTP. When it fails too,
// the error says both.
func (c *Conn) reprobe(ctx context.Context, initErr error) error {
	switch {
	case c.http != nil:
		c.http.rt.resetFailure()
		if err := c.http.fresh(ctx); err != nil {
			return &reprobeError{server: c.name, init: initErr, discover: err}
		}
	case c.processGone():
		if waitClosed(c.proc.exited, 500*time.Millisecond) {
			initErr = c.lostProcess() // its exit status and stderr, before they are gone
		}
		if err := c.respawn("initialize", "server/discover"); err != nil {
			return &reprobeError{server: c.name, init: initErr, discover: err}
		}
	}
	if err := c.discover(ctx, ModernProtocolVersion, false); err != nil {
		return &reprobeError{server: c.name, init: initErr, discover: err}
	}
	return nil
}

// reprobeError is the failure of a legacy-hinted startup whose modern
// probe failed too.
type reprobeError struct {
	server         string
	init, discover error
}

func (e *reprobeError) Error() string {
	prefix := fmt.Sprintf("server %q: ", e.server)
	return fmt.Sprintf("%sinitialize failed: %s; server/discover, tried in case the server changed protocol, failed too: %s", prefix,
		strings.TrimPrefix(e.init.Error(), prefix), strings.TrimPrefix(e.discover.Error(), prefix))
}

// Unwrap: the probe's error first, as the later of the two.
func (e *reprobeError) Unwrap() []error { return []error{e.discover, e.init} }

// fallBack runs the legacy handshake after a probe that found a legacy
// server: on the same process when it still runs (else on a new one), or
// over HTTP on a fresh go-sdk connection.
func (c *Conn) fallBack(ctx context.Context, version string) error {
	if c.http != nil {
		c.http.rt.resetFailure()
		if err := c.http.fresh(ctx); err != nil {
			return err
		}
		return c.initialize(ctx, version)
	}
	if c.processGone() {
		if err := c.respawn("server/discover", "initialize"); err != nil {
			return err
		}
		return c.initialize(ctx, version)
	}
	err := c.initialize(ctx, version)
	if err != nil && ctx.Err() == nil && c.processGone() {
		// It went on reading, then died of the probe after all.
		if err := c.respawn("server/discover", "initialize"); err != nil {
			return err
		}
		return c.initialize(ctx, version)
	}
	return err
}
