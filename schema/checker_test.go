package schema

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

type msg struct {
	dir  Direction
	body string
}

func host(body string) msg    { return msg{HostToSidecar, body} }
func sidecar(body string) msg { return msg{SidecarToHost, body} }

const okInit = `{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"mcp-sidecar","version":"1.0.0"},"protocolVersion":1,"capabilities":{"features":[]},"launcher":{"status":"unavailable","reason":"none given"},"servers":[],"config":{"sources":[],"errors":[],"warnings":[],"replaced":[]}}}`

// TestCheckerFindsMismatches: each exchange is checked in order; want is
// a piece of the error the checker must report, or "" for none.
func TestCheckerFindsMismatches(t *testing.T) {
	for _, c := range []struct {
		name string
		msgs []msg
		want string
	}{
		{"valid initialize", []msg{host(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"h"}}}`), sidecar(okInit)}, ""},
		{"unknown param member", []msg{host(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"h"},"colour":"red"}}`), sidecar(okInit)}, "colour"},
		{"wrong param type", []msg{host(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"h"},"configFiles":"a.toml"}}`), sidecar(okInit)}, "configFiles"},
		{"null for an optional param is absent", []msg{host(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"h"},"features":null,"launcher":null}}`), sidecar(okInit)}, ""},
		{"null for a required param is missing", []msg{host(`{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":null}}`),
			sidecar(`{"jsonrpc":"2.0","id":2,"result":null}`)}, "sessionId"},
		{"null in the sidecar's notification is not absent", []msg{sidecar(`{"jsonrpc":"2.0","method":"mcp/toolsChanged","params":{"sessionId":"s1","server":"a","reason":null}}`)}, "reason"},
		{"bad params answered invalid_params are a test of that answer",
			[]msg{host(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"h"},"configFiles":"a.toml"}}`),
				sidecar(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":{"kind":"invalid_params","retryable":false}}}`)}, ""},
		{"missing result member", []msg{host(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"h"}}}`),
			sidecar(`{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"s"},"capabilities":{"features":[]},"launcher":{"status":"verified"},"servers":[]}}`)}, "protocolVersion"},
		{"extra result member", []msg{host(`{"jsonrpc":"2.0","id":"a","method":"session/close","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":"a","result":{"closed":true}}`)}, "closed"},
		{"null where a list is due", []msg{host(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":2,"result":{"tools":null,"servers":[]}}`)}, "tools"},
		{"enum value unknown", []msg{sidecar(`{"jsonrpc":"2.0","method":"mcp/toolsChanged","params":{"sessionId":"s1","server":"a","reason":"whim"}}`)}, "reason"},
		{"unknown notification", []msg{sidecar(`{"jsonrpc":"2.0","method":"mcp/surprise","params":{}}`)}, "not in the protocol schema"},
		{"notification in the wrong direction", []msg{host(`{"jsonrpc":"2.0","method":"mcp/log","params":{"server":"a","level":"info","data":"x"}}`)}, "not in the protocol schema"},
		{"host request params", []msg{sidecar(`{"jsonrpc":"2.0","id":7,"method":"mcp/elicit","params":{"sessionId":"s1","server":"a"}}`)}, "params"},
		{"host's answer to a host request", []msg{sidecar(`{"jsonrpc":"2.0","id":7,"method":"mcp/roots","params":{"sessionId":"s1","server":"a"}}`),
			host(`{"jsonrpc":"2.0","id":7,"result":{"roots":[{"name":"no uri"}]}}`)}, "uri"},
		{"host's error to a host request is free", []msg{sidecar(`{"jsonrpc":"2.0","id":7,"method":"mcp/roots","params":{"sessionId":"s1","server":"a"}}`),
			host(`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no","data":[1]}}`)}, ""},
		{"error without data", []msg{host(`{"jsonrpc":"2.0","id":3,"method":"servers/status","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"unknown session"}}`)}, "error data"},
		{"error kind unknown", []msg{host(`{"jsonrpc":"2.0","id":3,"method":"servers/status","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"x","data":{"kind":"oops","retryable":false}}}`)}, "oops"},
		{"error kind with another code", []msg{host(`{"jsonrpc":"2.0","id":3,"method":"servers/status","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":3,"error":{"code":-32010,"message":"x","data":{"kind":"unknown_session","retryable":false}}}`)}, "want -32001"},
		{"error kind not listed for the method", []msg{host(`{"jsonrpc":"2.0","id":3,"method":"servers/status","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":3,"error":{"code":-32014,"message":"x","data":{"kind":"tool_timeout","retryable":true}}}`)}, "not listed for servers/status"},
		{"common error kind", []msg{host(`{"jsonrpc":"2.0","id":3,"method":"servers/status","params":{"sessionId":"s1"}}`),
			sidecar(`{"jsonrpc":"2.0","id":3,"error":{"code":-32800,"message":"request cancelled","data":{"kind":"cancelled","retryable":false}}}`)}, ""},
		{"server_error keeps the server's code", []msg{host(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"sessionId":"s1","server":"a","uri":"x:/"}}`),
			sidecar(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no","data":{"kind":"server_error","server":"a","retryable":false,"serverCode":-32602}}}`)}, ""},
		{"parse error with a null id", []msg{sidecar(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad frame","data":{"kind":"parse_error","retryable":false}}}`)}, ""},
		{"answer to no request", []msg{sidecar(`{"jsonrpc":"2.0","id":99,"result":null}`)}, "no request"},
		{"unknown envelope member", []msg{sidecar(`{"jsonrpc":"2.0","method":"mcp/log","params":{"server":"a","level":"info","data":1},"extra":1}`)}, "extra"},
		{"unknown method never answered", []msg{host(`{"jsonrpc":"2.0","id":4,"method":"tools/search","params":{}}`)}, "tools/search"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, err := NewChecker()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range c.msgs {
				ch.Check(m.dir, []byte(m.body))
			}
			err = ch.Err()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("want no mismatch, got:\n%v", err)
			case c.want != "" && err == nil:
				t.Errorf("want a mismatch naming %q, got none", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("want a mismatch naming %q, got:\n%v", c.want, err)
			}
		})
	}
}

// TestCheckerHostAnswersMalformed: a test that makes the host answer a
// sidecar request with a malformed result on purpose says so, and only
// that method's results go unchecked.
func TestCheckerHostAnswersMalformed(t *testing.T) {
	ch, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	ch.HostAnswersMalformed("mcp/roots")
	ch.Check(SidecarToHost, []byte(`{"jsonrpc":"2.0","id":7,"method":"mcp/roots","params":{"sessionId":"s1","server":"a"}}`))
	ch.Check(HostToSidecar, []byte(`{"jsonrpc":"2.0","id":7,"result":null}`))
	if err := ch.Err(); err != nil {
		t.Errorf("a malformed answer declared: %v", err)
	}
	ch.Check(SidecarToHost, []byte(`{"jsonrpc":"2.0","id":8,"method":"mcp/elicit","params":{"sessionId":"s1","server":"a","params":{}}}`))
	ch.Check(HostToSidecar, []byte(`{"jsonrpc":"2.0","id":8,"result":null}`))
	if err := ch.Err(); err == nil || !strings.Contains(err.Error(), "mcp/elicit result") {
		t.Errorf("an undeclared malformed answer: %v", err)
	}
}

// TestCheckerSplitsFrames: the taps find messages in frames however the
// bytes are split, and report a broken frame.
func TestCheckerSplitsFrames(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	bad := `{"jsonrpc":"2.0","method":"mcp/surprise"}`
	good := `{"jsonrpc":"2.0","method":"mcp/log","params":{"server":"a","level":"stderr","data":"line"}}`
	stream := frame(good) + frame(bad) + frame(good)
	for _, chunk := range []int{1, 7, len(stream)} {
		ch, _ := NewChecker()
		r := ch.Reader(SidecarToHost, strings.NewReader(stream))
		buf := make([]byte, chunk)
		var got bytes.Buffer
		for {
			n, err := r.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
		}
		if got.String() != stream {
			t.Fatalf("chunk %d: the tap changed the bytes", chunk)
		}
		err := ch.Err()
		if err == nil || strings.Count(err.Error(), "message: ") != 1 {
			t.Errorf("chunk %d: want exactly the one bad message reported, got %v", chunk, err)
		}
	}

	ch, _ := NewChecker()
	w := ch.Writer(HostToSidecar, nopCloser{io.Discard})
	io.WriteString(w, "Content-Length: x\r\n\r\n{}")
	if err := ch.Err(); err == nil || !strings.Contains(err.Error(), "Content-Length") {
		t.Errorf("a broken frame is reported: got %v", err)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// TestCheckerHostStreams: HostStreams checks what the host reads as the
// sidecar's messages and what it writes as its own, and a nil Checker
// (a test that checks only in some runs) leaves the streams alone.
func TestCheckerHostStreams(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	bad := frame(`{"jsonrpc":"2.0","method":"mcp/surprise"}`)

	ch, err := NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	r, w := ch.HostStreams(strings.NewReader(bad), nopCloser{io.Discard})
	io.ReadAll(r)
	io.WriteString(w, bad)
	got := ch.Err()
	for _, dir := range []Direction{SidecarToHost, HostToSidecar} {
		if got == nil || !strings.Contains(got.Error(), dir.String()+": ") {
			t.Errorf("the bad message %s is not reported: got %v", dir, got)
		}
	}

	var none *Checker
	in, out := strings.NewReader(bad), nopCloser{io.Discard}
	if r, w := none.HostStreams(in, out); r != io.Reader(in) || w != io.WriteCloser(out) {
		t.Errorf("a nil Checker wraps the streams: got %T, %T", r, w)
	}
}
