package servermeta

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport wraps a server transport so that FromRequest sees the sandbox
// keys of each tools/call as they arrived on the wire.
//
// go-sdk hands the connection's Read result to the server undecoded: a
// *jsonrpc.Request whose Params are the wire bytes. The wrapper copies the
// raw values of the three keys into _meta[RawMetaKey] as a JSON string,
// which go-sdk's decoding cannot alter, and removes any RawMetaKey the
// client sent. No state is kept between requests, so there is nothing to
// correlate and nothing to leak from one call to the next.
func Transport(inner mcp.Transport) mcp.Transport {
	return &transport{inner: inner}
}

type transport struct {
	inner mcp.Transport
}

func (t *transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c}, nil
}

// SupportsProtocolVersion forwards the inner transport's answer, so that
// wrapping does not widen what the server advertises.
func (t *transport) SupportsProtocolVersion(version string) bool {
	if s, ok := t.inner.(mcp.ProtocolVersionSupporter); ok {
		return s.SupportsProtocolVersion(version)
	}
	return true
}

type conn struct {
	mcp.Connection
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" {
		req.Params = annotate(req.Params)
	}
	return msg, nil
}

// annotate returns params with RawMetaKey set from the raw sandbox keys,
// or params unchanged when there is nothing to do or the params are not an
// object (go-sdk then reports the error as it would without the wrapper).
func annotate(params json.RawMessage) json.RawMessage {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil {
		return params
	}
	rawMeta, ok := p["_meta"]
	if !ok {
		return params
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(rawMeta, &meta); err != nil || meta == nil {
		return params
	}
	keys := make(map[string]json.RawMessage, 3)
	for _, k := range [...]string{KeyState, KeyStateMeta, KeyLauncher} {
		v, ok := meta[k]
		if !ok {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return params
		}
		keys[k] = buf.Bytes()
	}
	_, spoofed := meta[RawMetaKey]
	if len(keys) == 0 && !spoofed {
		return params
	}
	delete(meta, RawMetaKey)
	if len(keys) > 0 {
		inner, err := marshal(keys)
		if err != nil {
			return params
		}
		s, err := marshal(string(inner))
		if err != nil {
			return params
		}
		meta[RawMetaKey] = s
	}
	m, err := marshal(meta)
	if err != nil {
		return params
	}
	p["_meta"] = m
	out, err := marshal(p)
	if err != nil {
		return params
	}
	return out
}
