package mcpclient

import "github.com/modelcontextprotocol/go-sdk/jsonrpc"

// messageSize tells Options.MessageSize of a message go-sdk decoded (the
// HTTP transport's): its payload, the result or params, is most of it and
// what the message holds on to.
func (c *Conn) messageSize(msg jsonrpc.Message) {
	if c.opts.MessageSize == nil {
		return
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.opts.MessageSize(len(m.Result))
	case *jsonrpc.Request:
		c.opts.MessageSize(len(m.Params))
	}
}
