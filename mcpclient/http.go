package mcpclient

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpHeaders builds the static headers of a Streamable HTTP server:
// http_headers, then env_http_headers and the bearer token, which read the
// sidecar's environment. A variable that is named but unset or empty is a
// startup error naming the variable (never its value).
func httpHeaders(opts *Options) (http.Header, error) {
	cfg := opts.Config
	lookup := opts.Env
	if lookup == nil {
		lookup = os.LookupEnv
	}
	h := make(http.Header)
	for k, v := range cfg.HTTPHeaders {
		h.Set(k, v)
	}
	names := make([]string, 0, len(cfg.EnvHTTPHeaders))
	for k := range cfg.EnvHTTPHeaders {
		names = append(names, k)
	}
	sort.Strings(names) // deterministic error for several missing variables
	for _, k := range names {
		envName := cfg.EnvHTTPHeaders[k]
		v, ok := lookup(envName)
		if !ok || v == "" {
			return nil, fmt.Errorf("server %q: environment variable %s (env_http_headers %q) is not set", opts.Name, envName, k)
		}
		h.Set(k, v)
	}
	if name := cfg.BearerTokenEnvVar; name != "" {
		v, ok := lookup(name)
		if !ok || v == "" {
			return nil, fmt.Errorf("server %q: environment variable %s (bearer_token_env_var) is not set", opts.Name, name)
		}
		h.Set("Authorization", "Bearer "+v)
	}
	return h, nil
}

// headerTransport adds the configured headers to every request and captures
// the verbatim responses of calls made under a rawSink (see raw.go).
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
	maxMsg  int
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not modify its argument
	for k, v := range t.headers {
		req.Header[k] = v
	}
	sink := sinkFrom(req.Context())
	if sink != nil && req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			data, _ := io.ReadAll(io.LimitReader(body, int64(t.maxMsg)+1))
			body.Close()
			if msg, err := jsonrpc.DecodeMessage(data); err == nil {
				if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
					sink.expect(r.ID)
				}
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || sink == nil || !sink.hasPending() || resp.Body == nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		resp.Body = &jsonBodyTap{rc: resp.Body, sink: sink, max: t.maxMsg}
	case "text/event-stream":
		resp.Body = &sseBodyTap{rc: resp.Body, sink: sink, max: t.maxMsg}
	}
	return resp, nil
}

// deliverRaw hands a message to the sink if it answers one of its calls.
func deliverRaw(sink *rawSink, data []byte) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && sink.expecting(resp.ID) {
		sink.deliver(resp)
	}
}

// jsonBodyTap sees a single-message JSON body as go-sdk reads it, and
// delivers it at EOF, before go-sdk sees the EOF (go-sdk reads to EOF
// before decoding).
type jsonBodyTap struct {
	rc   io.ReadCloser
	sink *rawSink
	max  int
	buf  bytes.Buffer
	over bool
}

func (b *jsonBodyTap) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if !b.over {
		if b.buf.Len()+n > b.max {
			b.over = true
			b.buf = bytes.Buffer{}
		} else {
			b.buf.Write(p[:n])
		}
	}
	if err == io.EOF && !b.over {
		deliverRaw(b.sink, b.buf.Bytes())
		b.over = true // deliver once
	}
	return n, err
}

func (b *jsonBodyTap) Close() error { return b.rc.Close() }

// sseBodyTap parses the event stream as go-sdk reads it; an event is
// delivered when its terminating blank line passes through, which is before
// go-sdk's own scanner can yield it.
type sseBodyTap struct {
	rc   io.ReadCloser
	sink *rawSink
	max  int

	line  []byte
	data  []byte
	event string
	over  bool // the current line or event exceeded max: ignore it
}

func (b *sseBodyTap) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			if len(b.line) < b.max {
				b.line = append(b.line, c)
			} else {
				b.over = true
			}
			continue
		}
		b.endLine()
	}
	return n, err
}

func (b *sseBodyTap) endLine() {
	line := bytes.TrimSuffix(b.line, []byte("\r"))
	b.line = b.line[:0]
	if len(line) == 0 {
		if !b.over && len(b.data) > 0 && (b.event == "" || b.event == "message") {
			deliverRaw(b.sink, b.data)
		}
		b.data, b.event, b.over = b.data[:0], "", false
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "data":
		if len(b.data) > 0 {
			b.data = append(b.data, '\n')
		}
		if len(b.data)+len(value) > b.max {
			b.over = true
			return
		}
		b.data = append(b.data, value...)
	case "event":
		b.event = string(value)
	}
}

func (b *sseBodyTap) Close() error { return b.rc.Close() }

// httpTransport is go-sdk's Streamable HTTP client with the configured
// headers and raw capture in its RoundTripper.
func (c *Conn) httpTransport() (mcp.Transport, error) {
	headers, err := httpHeaders(&c.opts)
	if err != nil {
		return nil, err
	}
	base := c.opts.HTTPClient
	if base == nil {
		base = http.DefaultClient
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	client := *base
	client.Timeout = 0 // the standalone SSE stream lives as long as the session
	client.Transport = &headerTransport{base: rt, headers: headers, maxMsg: c.opts.MaxLineBytes}
	return &mcp.StreamableClientTransport{
		Endpoint:   c.opts.Config.URL,
		HTTPClient: &client,
		// A stream that breaks is resumed a few times with backoff; beyond
		// that the connection is lost and the sidecar's restart policy
		// takes over.
		MaxRetries:   3,
		MaxEventSize: c.opts.MaxLineBytes,
	}, nil
}
