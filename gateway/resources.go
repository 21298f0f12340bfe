package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/jsonscan"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// noCache is the caching hint of the gateway's lists (MCP 2026-07-28):
// stale at once, and for this user only. They merge servers whose lists
// change (list_changed) and start (a dormant server's first use).
var noCache = mcp.Cacheable{TTLMs: 0, CacheScope: "private"}

// codeResourceNotFound is MCP's error for a resource no server has.
const codeResourceNotFound = -32002

// serversWith are the session's servers that declare capability
// (resources, prompts), or are starting (their listing waits for the
// startup; one without the capability answers an error, left out). A
// dormant server is not started for a listing, so that a client listing
// everything at connection (most do) keeps lazy startup: its resources
// and prompts appear once it runs, announced by list_changed.
func (c *client) serversWith(ctx context.Context, capability string) (string, []string, error) {
	id, err := c.hostSession(ctx)
	if err != nil {
		return "", nil, err
	}
	var st protocol.ServersStatusResult
	if err := c.call(ctx, protocol.MethodServersStatus, protocol.SessionParams{SessionID: id}, &st); err != nil {
		return "", nil, mcpError(err)
	}
	var out []string
	for _, s := range st.Servers {
		if s.State == protocol.StateStarting {
			out = append(out, s.Name)
			continue
		}
		if s.State != protocol.StateReady {
			continue
		}
		var caps map[string]json.RawMessage
		if json.Unmarshal(s.Capabilities, &caps) != nil {
			continue
		}
		if v, ok := caps[capability]; ok && string(v) != "null" {
			out = append(out, s.Name)
		}
	}
	return id, out, nil
}

type listParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	All       bool   `json:"all"`
}

func (c *client) listResources(ctx context.Context) (*mcp.ListResourcesResult, error) {
	id, servers, err := c.serversWith(ctx, "resources")
	if err != nil {
		return nil, err
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, Cacheable: noCache}
	for _, s := range servers {
		var res mcp.ListResourcesResult
		if err := c.call(ctx, protocol.MethodResourcesList, listParams{id, s, true}, &res); err != nil {
			c.g.logger.Debug("gateway: listing resources", "server", s, "err", err)
			continue
		}
		c.mu.Lock()
		for _, r := range res.Resources {
			c.resourceOwner[r.URI] = s
		}
		c.mu.Unlock()
		out.Resources = append(out.Resources, res.Resources...)
	}
	return out, nil
}

func (c *client) listTemplates(ctx context.Context) (*mcp.ListResourceTemplatesResult, error) {
	id, servers, err := c.serversWith(ctx, "resources")
	if err != nil {
		return nil, err
	}
	out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}, Cacheable: noCache}
	var owners []templateOwner
	for _, s := range servers {
		var res mcp.ListResourceTemplatesResult
		if err := c.call(ctx, protocol.MethodResourceTemplates, listParams{id, s, true}, &res); err != nil {
			c.g.logger.Debug("gateway: listing resource templates", "server", s, "err", err)
			continue
		}
		for _, t := range res.ResourceTemplates {
			prefix, _, _ := strings.Cut(t.URITemplate, "{")
			owners = append(owners, templateOwner{prefix: prefix, server: s})
		}
		out.ResourceTemplates = append(out.ResourceTemplates, res.ResourceTemplates...)
	}
	c.mu.Lock()
	c.templateOwner = owners
	c.mu.Unlock()
	return out, nil
}

// ownerOf is the server of a resource URI: the one that listed it, else
// the one whose template's fixed part is the longest prefix of it, else
// the session's one server.
func (c *client) ownerOf(ctx context.Context, uri string) (string, string, error) {
	id, err := c.hostSession(ctx)
	if err != nil {
		return "", "", err
	}
	if s := c.single(); s != "" {
		return id, s, nil
	}
	c.mu.Lock()
	s, ok := c.resourceOwner[uri]
	owners := c.templateOwner
	c.mu.Unlock()
	if !ok {
		best := -1
		for _, o := range owners {
			if strings.HasPrefix(uri, o.prefix) && len(o.prefix) > best {
				s, best = o.server, len(o.prefix)
			}
		}
		if best < 0 {
			return "", "", &jsonrpc.Error{Code: codeResourceNotFound, Message: fmt.Sprintf("resource %q: no server listed it (list the resources or templates first)", uri)}
		}
	}
	return id, s, nil
}

func (c *client) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, s, err := c.ownerOf(ctx, req.Params.URI)
	if err != nil {
		return nil, err
	}
	p := protocol.ResourcesReadParams{SessionID: id, Server: s, URI: req.Params.URI}
	round := inputRound{&p.InputResponses, &p.RequestState, &p.ClientCapabilities}
	if err := roundOf(req.Session, req.Params.Meta, req.Params.InputResponses, req.Params.RequestState, round); err != nil {
		return nil, err
	}
	raw, err := c.inputRounds(ctx, req.Session, protocol.MethodResourcesRead, round, c.hostRaw(protocol.MethodResourcesRead, &p))
	if err != nil {
		return nil, mcpError(err)
	}
	var res mcp.ReadResourceResult
	if err := json.Unmarshal(withResultType(req.Session, raw), &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the result of resources/read of %q cannot be relayed: %v", req.Params.URI, err)}
	}
	if res.CacheScope == "" {
		// go-sdk writes the member whatever its value, and MCP 2026-07-28
		// knows "public" and "private" only. A server that gave no scope
		// (any server of an earlier protocol) gets the gateway's: its
		// content is one user's, as the gateway's listings are (noCache).
		res.CacheScope = noCache.CacheScope
	}
	return &res, nil
}

func (c *client) subscribe(ctx context.Context, uri string, on bool) error {
	id, s, err := c.ownerOf(ctx, uri)
	if err != nil {
		return err
	}
	// The host session's subscription is its first subscriber's and
	// ends with its last (session.go).
	if !c.host.subscribe(c, s, uri, on) {
		return nil
	}
	method := protocol.MethodResourcesSubscribe
	if !on {
		method = protocol.MethodResourcesUnsubscribe
	}
	if err := c.call(ctx, method, protocol.ResourceSubscribeParams{SessionID: id, Server: s, URI: uri}, nil); err != nil {
		if on {
			c.host.subscribe(c, s, uri, false)
		}
		return mcpError(err)
	}
	return nil
}

func (c *client) listPrompts(ctx context.Context) (*mcp.ListPromptsResult, error) {
	id, servers, err := c.serversWith(ctx, "prompts")
	if err != nil {
		return nil, err
	}
	out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}, Cacheable: noCache}
	for _, s := range servers {
		var res mcp.ListPromptsResult
		if err := c.call(ctx, protocol.MethodPromptsList, listParams{id, s, true}, &res); err != nil {
			c.g.logger.Debug("gateway: listing prompts", "server", s, "err", err)
			continue
		}
		for _, p := range res.Prompts {
			p.Name = c.qualify(s, p.Name)
			out.Prompts = append(out.Prompts, p)
		}
	}
	return out, nil
}

func (c *client) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	id, err := c.hostSession(ctx)
	if err != nil {
		return nil, err
	}
	s, name, ok := c.splitName(req.Params.Name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q: prompts are named mcp__<server>__<prompt>", req.Params.Name)}
	}
	p := protocol.PromptsGetParams{SessionID: id, Server: s, Name: name, Arguments: req.Params.Arguments}
	round := inputRound{&p.InputResponses, &p.RequestState, &p.ClientCapabilities}
	if err := roundOf(req.Session, req.Params.Meta, req.Params.InputResponses, req.Params.RequestState, round); err != nil {
		return nil, err
	}
	raw, err := c.inputRounds(ctx, req.Session, protocol.MethodPromptsGet, round, c.hostRaw(protocol.MethodPromptsGet, &p))
	if err != nil {
		return nil, mcpError(err)
	}
	var res mcp.GetPromptResult
	if err := json.Unmarshal(withResultType(req.Session, raw), &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the result of prompt %q cannot be relayed: %v", req.Params.Name, err)}
	}
	return &res, nil
}

// complete routes completion/complete by its ref: a prompt's server from
// its name, a resource template's from its owner.
func (c *client) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p == nil || p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	var id, s string
	ref := *p.Ref
	switch ref.Type {
	case "ref/prompt":
		var err error
		if id, err = c.hostSession(ctx); err != nil {
			return nil, err
		}
		var ok bool
		if s, ref.Name, ok = c.splitName(ref.Name); !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", p.Ref.Name)}
		}
	case "ref/resource":
		var err error
		if id, s, err = c.ownerOf(ctx, ref.URI); err != nil {
			return nil, err
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	hp := map[string]any{"sessionId": id, "server": s, "ref": ref, "argument": p.Argument}
	if p.Context != nil {
		hp["context"] = p.Context
	}
	var res mcp.CompleteResult
	if err := c.call(ctx, protocol.MethodCompletionComplete, hp, &res); err != nil {
		return nil, mcpError(err)
	}
	return &res, nil
}

// withResultType is raw, a result of resources/read or prompts/get, with
// resultType "complete" when it has none and the client speaks MCP
// 2026-07-28, which requires the member of these results (a server of an
// earlier protocol sends none). go-sdk sets it on the results of its own
// handlers; the gateway answers these methods in its middleware, past
// them, so it sets it here, where go-sdk's decoding of the result takes it
// in.
func withResultType(ss *mcp.ServerSession, raw json.RawMessage) json.RawMessage {
	if !modern(ss) {
		return raw
	}
	// The host's results are checked JSON; a result of megabytes names
	// its resultType, if at all, at one end.
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || jsonscan.OuterMember(trimmed, "resultType", false) != nil {
		return raw
	}
	rest := bytes.TrimSpace(trimmed[1:])
	out := make([]byte, 0, len(trimmed)+25)
	out = append(out, `{"resultType":"complete"`...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
