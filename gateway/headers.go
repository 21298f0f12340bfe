package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// paramHeaders checks the Mcp-Param-* headers of a tools/call of MCP
// 2026-07-28 over HTTP against the called tool's x-mcp-header declarations
// and the call's arguments (SEP-2243, "Custom Headers from Tool
// Parameters": a server rejects a request whose headers disagree with its
// body), then hands the request to next. A mismatch is refused with HTTP
// 400 and JSON-RPC error -32020 (HeaderMismatch), as go-sdk refuses a
// mismatched Mcp-Method or Mcp-Name; go-sdk cannot check these headers
// itself, since the gateway's tools are not tools of its mcp.Server
// (gatewayTool in client.go).
//
// The declarations are the catalog's (the host's tools/get, and for a
// transparent proxy tools/search to find the qualified name of the
// server's own): the same tool definitions the client listed. A call the
// catalog cannot resolve passes unchecked: it fails as an unknown tool.
// In deferred mode the client calls the three tools of deferred.go, which
// declare no headers.
func (g *Gateway) paramHeaders(c *client, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || g.opts.Deferred {
			next.ServeHTTP(w, r)
			return
		}
		// At most go-sdk's bound is read here: a longer body goes on
		// whole to go-sdk, which refuses it (413) without the gateway
		// holding it.
		body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes+1))
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		if err != nil || len(body) > mcp.DefaultMaxRequestBodyBytes {
			// go-sdk reports the body it cannot read or take.
			next.ServeHTTP(w, r)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		// A batch, a notification, a response or another method is
		// go-sdk's to judge.
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || len(msg.ID) == 0 || msg.Params.Name == "" {
			next.ServeHTTP(w, r)
			return
		}
		bindings, err := c.headerBindings(r.Context(), msg.Params.Name)
		if err != nil {
			g.logger.Debug("gateway: Mcp-Param-* headers not checked", "tool", msg.Params.Name, "err", err)
			next.ServeHTTP(w, r)
			return
		}
		if err := bindings.Check(r.Header, msg.Params.Arguments); err != nil {
			writeHeaderMismatch(w, msg.ID, msg.Params.Name, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readCloser reads the body's first bytes again, then the rest of it.
type readCloser struct {
	io.Reader
	io.Closer
}

// headerCache holds the x-mcp-header declarations of the tools a client
// called, so that a call costs the catalog lookups of its tool once per
// catalog: a change of the session's catalog (the host's
// tools/listChanged) empties it, and a lookup that overlapped a change is
// not kept.
type headerCache struct {
	mu       sync.Mutex
	gen      uint64
	bindings map[string]mcpheader.Bindings
}

// forget empties the cache: the catalog changed.
func (hc *headerCache) forget() {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.gen++
	hc.bindings = nil
}

// get returns the declarations cached for name, and the cache's
// generation to put a lookup's under.
func (hc *headerCache) get(name string) (b mcpheader.Bindings, gen uint64, ok bool) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	b, ok = hc.bindings[name]
	return b, hc.gen, ok
}

// put keeps the declarations of name looked up in generation gen, unless
// the catalog changed since.
func (hc *headerCache) put(name string, b mcpheader.Bindings, gen uint64) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.gen != gen {
		return
	}
	if hc.bindings == nil {
		hc.bindings = map[string]mcpheader.Bindings{}
	}
	hc.bindings[name] = b
}

// headerBindings are the x-mcp-header declarations of the tool a client
// calls by name (qualified, or the server's own for a transparent proxy).
func (c *client) headerBindings(ctx context.Context, name string) (mcpheader.Bindings, error) {
	b, gen, ok := c.headers.get(name)
	if ok {
		return b, nil
	}
	b, err := c.lookUpBindings(ctx, name)
	if err != nil {
		return nil, err
	}
	c.headers.put(name, b, gen)
	return b, nil
}

// lookUpBindings finds the declarations of the tool named in the catalog.
func (c *client) lookUpBindings(ctx context.Context, name string) (mcpheader.Bindings, error) {
	id, err := c.hostSession(ctx)
	if err != nil {
		return nil, err
	}
	qualified := name
	if s := c.single(); s != "" {
		// The client knows the server's own name; tools/get takes the
		// catalog's qualified one, which the catalog may have shortened
		// or hashed (catalog/qualify.go).
		if strings.Contains(name, ",") {
			return nil, errors.New("a name with a comma cannot be selected")
		}
		var found protocol.ToolsSearchResult
		if err := c.call(ctx, protocol.MethodToolsSearch, protocol.ToolsSearchParams{SessionID: id, Query: "select:" + name, Servers: []string{s}}, &found); err != nil {
			return nil, err
		}
		qualified = ""
		for _, res := range found.Results {
			if res.Server == s && res.Tool == name {
				qualified = res.Name
			}
		}
		if qualified == "" {
			return nil, errors.New("no such tool")
		}
	}
	var res struct {
		Tools []struct {
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := c.call(ctx, protocol.MethodToolsGet, protocol.ToolsGetParams{SessionID: id, Names: []string{qualified}}, &res); err != nil {
		return nil, err
	}
	if len(res.Tools) != 1 {
		return nil, errors.New("no such tool")
	}
	// The catalog left out a tool whose declarations are invalid, so
	// Parse succeeds on every tool it has.
	return mcpheader.Parse(res.Tools[0].InputSchema)
}

// writeHeaderMismatch answers a request whose headers disagree with its
// body: HTTP 400 with the JSON-RPC error, as go-sdk writes its own.
func writeHeaderMismatch(w http.ResponseWriter, id json.RawMessage, tool string, err error) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{Code: mcp.CodeHeaderMismatch, Message: "tools/call of " + tool + ": " + err.Error()}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}
