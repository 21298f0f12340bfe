package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// answerElicit relays elicitation/create in the modes the host declared:
// form (the default when params have no mode) and url.
func (c *Conn) answerElicit(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var head struct {
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(params, &head); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation params: " + err.Error()}
	}
	form := head.Mode == "" || head.Mode == "form"
	switch head.Mode {
	case "", "form":
		if !c.opts.Elicitation {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `client does not support "form" elicitation`}
		}
	case "url":
		if !c.opts.ElicitationURL {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `client does not support "url" elicitation`}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unsupported elicitation mode %q", head.Mode)}
	}
	raw, err := c.hostAnswer("elicitation/create", checkElicit)(c.opts.Handlers.Elicit(ctx, params))
	if err != nil {
		return nil, err
	}
	if form {
		if raw, err = completeForm(params, raw); err != nil {
			c.opts.Logger.Warn("the host's answer to an elicitation was refused", "server", c.name, peerlog.Err("err", err))
			if f := c.opts.Handlers.HostAnswerRefused; f != nil {
				f("elicitation/create", err)
			}
			return nil, err
		}
	}
	return raw, nil
}
