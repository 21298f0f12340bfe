package mcpclient

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestDecodeLine: the fast path for success responses agrees with go-sdk's
// decoder on every message it takes, keeps the result's bytes, and leaves
// everything else to the decoder.
func TestDecodeLine(t *testing.T) {
	tests := []struct {
		line     string
		fast     bool
		result   string // for responses
		wantFail bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a \"}\" b, {["}],"n":12345678901234567890}}`, true,
			`{"content":[{"type":"text","text":"a \"}\" b, {["}],"n":12345678901234567890}`, false},
		{`{"result" : {"b":1, "a":[]} , "id" : "x-1", "jsonrpc" : "2.0"}`, true, `{"b":1, "a":[]}`, false},
		{`{"jsonrpc":"2.0","id":7,"result":"\\\""}`, true, `"\\\""`, false},
		{`{"jsonrpc":"2.0","id":7,"result":null}`, true, `null`, false},
		{`{"jsonrpc":"2.0","id":7,"result":12.5e3}`, true, `12.5e3`, false},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}`, false, "", false},
		{`{"jsonrpc":"2.0","id":3,"method":"roots/list"}`, false, "", false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`, false, "", false},
		{`{"jsonrpc":"2.0","id":4,"result":{},"_meta":{}}`, false, "{}", false},
		{`{"jsonrpc":"1.0","id":4,"result":{}}`, false, "", true},
		{`{"jsonrpc":"2.0","\u0069d":5,"r\u0065sult":{"a":1}}`, true, `{"a":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			res, _, fast := splitResult([]byte(tt.line))
			if fast != tt.fast {
				t.Fatalf("fast path = %v, want %v", fast, tt.fast)
			}
			got, err := decodeLine([]byte(tt.line))
			want, werr := jsonrpc.DecodeMessage([]byte(tt.line))
			if (err != nil) != tt.wantFail || (werr != nil) != tt.wantFail {
				t.Fatalf("decodeLine err %v, DecodeMessage err %v, want failure %v", err, werr, tt.wantFail)
			}
			if tt.wantFail {
				return
			}
			if fast && string(res) != tt.result {
				t.Errorf("result %s, want %s", res, tt.result)
			}
			gr, gok := got.(*jsonrpc.Response)
			wr, wok := want.(*jsonrpc.Response)
			if gok != wok {
				t.Fatalf("decodeLine gave %T, DecodeMessage %T", got, want)
			}
			if gok {
				if gr.ID != wr.ID || (gr.Error == nil) != (wr.Error == nil) {
					t.Errorf("response %+v, want %+v", gr, wr)
				}
				if gr.Error == nil && string(gr.Result) != string(wr.Result) {
					t.Errorf("result %s, DecodeMessage's %s", gr.Result, wr.Result)
				}
				return
			}
			greq, wreq := got.(*jsonrpc.Request), want.(*jsonrpc.Request)
			if greq.ID != wreq.ID || greq.Method != wreq.Method || string(greq.Params) != string(wreq.Params) {
				t.Errorf("request %+v, DecodeMessage's %+v", greq, wreq)
			}
		})
	}
}
