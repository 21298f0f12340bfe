package protocol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// frameOf returns body framed as the peer sends it.
func frameOf(body string) string {
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

func request(id, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"x":1}}`, id, method)
}

// reply is what the test sees of one frame the Conn wrote.
type reply struct {
	ID     string            // JSON text of the id; "" when absent
	Method string            // for notifications the handler sends
	Code   int64             // error code; 0 for a result
	Msg    string            // compared as a substring (see cmpMsg)
	Result map[string]string // the echo handler's result, or notification params
}

// cmpMsg compares Msg fields by containment, so that a test names the
// part of an error message it cares about.
var cmpMsg = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Msg" },
	cmp.Comparer(func(a, b string) bool { return strings.Contains(a, b) || strings.Contains(b, a) }))

// echoHandler answers every request at once with its method, the id text
// and the params it saw, except "hold", which it leaves in flight (sending
// the request on held, when set); "lower" sets the frame limit to 50 bytes
// first. It reports each notification with a test/seen notification.
type echoHandler struct {
	c    *Conn
	held chan<- *Request
}

func (h echoHandler) Handle(ctx context.Context, req *Request) {
	if req.IsNotification() {
		h.c.Notify("test/seen", map[string]string{"method": req.Method, "params": string(req.Params)})
		return
	}
	if req.Method == "lower" {
		h.c.SetMaxFrameBytes(50)
	}
	if req.Method == "hold" {
		if h.held != nil {
			h.held <- req
		}
		return
	}
	h.c.Reply(req.ID, map[string]string{"method": req.Method, "id": string(req.ID), "params": string(req.Params)})
}

// echoed is the reply echoHandler gives to a request.
func echoed(id, method, params string) reply {
	return reply{ID: id, Result: map[string]string{"method": method, "id": id, "params": params}}
}

// echo is the reply to request(id, "echo").
func echo(id string) reply { return echoed(id, "echo", `{"x":1}`) }

// runConn serves a Conn with input as the peer's output, then closes the
// input. It returns every frame the Conn wrote and what Serve returned.
func runConn(t *testing.T, input io.Reader, opts ConnOptions) ([]reply, error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := NewConn(inR, outW, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx, echoHandler{c: c}) }()
	defer c.Close()

	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(inW, input)
		inW.Close()
	}()
	replies := readReplies(t, outR) // until the Conn closes its writer
	<-copied
	return replies, <-served
}

// readReplies parses frames from r until EOF, strictly: exactly
// "Content-Length: N\r\n\r\n" and N bytes of valid JSON-RPC 2.0.
func readReplies(t *testing.T, r io.Reader) []reply {
	t.Helper()
	var out []reply
	br := bufio.NewReader(r)
	for {
		body, err := readStrictFrame(br)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading frame %d: %v", len(out), err)
		}
		rep, err := parseReply(body)
		if err != nil {
			t.Fatalf("frame %d: %v: %s", len(out), err, body)
		}
		out = append(out, rep)
	}
}

func readStrictFrame(br *bufio.Reader) ([]byte, error) {
	body, err := readFrameBody(br, nil)
	if err != nil {
		return nil, err
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("invalid JSON body %q", body)
	}
	return body, nil
}

// readFrameBody reads one frame, strictly framed, and returns its body
// unchecked, in buf if it is large enough.
func readFrameBody(br *bufio.Reader, buf []byte) ([]byte, error) {
	line, err := br.ReadString('\n')
	if err == io.EOF && line == "" {
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	num, ok := strings.CutPrefix(line, "Content-Length: ")
	if !ok || !strings.HasSuffix(num, "\r\n") {
		return nil, fmt.Errorf("bad header line %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSuffix(num, "\r\n"))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bad length in %q", line)
	}
	if blank, err := br.ReadString('\n'); err != nil || blank != "\r\n" {
		return nil, fmt.Errorf("no blank line after header: %q, %v", blank, err)
	}
	body := buf[:0]
	if cap(body) < n {
		body = make([]byte, n)
	}
	body = body[:n]
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	return body, nil
}

func parseReply(body []byte) (reply, error) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int64     `json:"code"`
			Message string    `json:"message"`
			Data    ErrorData `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return reply{}, err
	}
	if m.JSONRPC != "2.0" {
		return reply{}, fmt.Errorf("jsonrpc member is %q", m.JSONRPC)
	}
	r := reply{ID: string(m.ID), Method: m.Method}
	switch {
	case m.Error != nil:
		if m.Error.Data.Kind == "" {
			return reply{}, errors.New("error without data.kind")
		}
		r.Code, r.Msg = m.Error.Code, m.Error.Message
	case m.Result != nil:
		if err := json.Unmarshal(m.Result, &r.Result); err != nil {
			return reply{}, err
		}
	case m.Params != nil:
		if err := json.Unmarshal(m.Params, &r.Result); err != nil {
			return reply{}, err
		}
	}
	return r, nil
}

// bodyReader yields a body of exactly n bytes without holding it: a
// request with the given id whose params string fills the rest.
type bodyReader struct {
	head, tail string
	n, off     int64
}

func newBodyReader(id string, n int64) *bodyReader {
	return &bodyReader{head: `{"jsonrpc":"2.0","id":` + id + `,"method":"big","params":"`, tail: `"}`, n: n}
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.off >= b.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.n-b.off)]
	tailAt := b.n - int64(len(b.tail))
	for i := range p {
		switch off := b.off + int64(i); {
		case off < int64(len(b.head)):
			p[i] = b.head[off]
		case off >= tailAt:
			p[i] = b.tail[off-tailAt]
		default:
			// The long middle: fill the rest of the run at once.
			end := min(int64(len(p)), tailAt-b.off)
			copy(p[i:end], bytes.Repeat([]byte{'a'}, int(end)-i))
			b.off += end
			return int(end), nil
		}
	}
	b.off += int64(len(p))
	return len(p), nil
}

// TestConnReading feeds the peer's bytes to a Conn whose handler echoes
// requests, and checks every frame the Conn writes: the echoes and its own
// answers to malformed input.
func TestConnReading(t *testing.T) {
	const hundredMiB = 100 << 20
	const exoticParams = `{"z":1,"a":"\u00e9 é <&>","n":12345678901234567890123,"f":1.50}`
	exotic := `{ "params" : ` + exoticParams + `,` + "\n\t" + `"method":"echo", "jsonrpc":"2.0" ,"id":5 }`

	tests := []struct {
		name    string
		input   func() io.Reader
		opts    ConnOptions
		want    []reply
		wantErr error // what Serve returns
	}{
		{
			name:  "request and response",
			input: text(frameOf(request("1", "echo"))),
			want:  []reply{echo("1")},
		},
		{
			name: "Content-Type header before and after",
			input: text(
				"Content-Length: " + length(request("1", "echo")) + "\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" +
					request("1", "echo") +
					"Content-Type: application/json\r\nContent-Length: " + length(request("2", "echo")) + "\r\n\r\n" + request("2", "echo")),
			want: []reply{
				echo("1"),
				echo("2"),
			},
		},
		{
			name: "header names in other case, no space, bare newlines, other headers",
			input: text(
				"content-length: " + length(request("1", "echo")) + "\r\n\r\n" + request("1", "echo") +
					"CONTENT-LENGTH:" + length(request("2", "echo")) + "\r\nX-Custom: yes\r\n\r\n" + request("2", "echo") +
					"Content-length:\t" + length(request("3", "echo")) + "\n\n" + request("3", "echo")),
			want: []reply{
				echo("1"),
				echo("2"),
				echo("3"),
			},
		},
		{
			name:  "blank lines between frames are skipped",
			input: text("\r\n\n" + frameOf(request("1", "echo")) + "\r\n" + frameOf(request("2", "echo"))),
			want: []reply{
				echo("1"),
				echo("2"),
			},
		},
		{
			name: "100 MiB announced and sent is drained and answered",
			input: func() io.Reader {
				return io.MultiReader(
					strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n", hundredMiB)),
					newBodyReader("7", hundredMiB),
					strings.NewReader(frameOf(request("8", "echo"))))
			},
			want: []reply{
				{ID: "7", Code: CodeParseError, Msg: "message of 104857600 bytes exceeds the limit of 67108864 bytes"},
				echo("8"),
			},
		},
		{
			name: "100 MiB announced then EOF",
			input: func() io.Reader {
				return io.MultiReader(
					strings.NewReader(fmt.Sprintf("Content-Length: %d\r\n\r\n", hundredMiB)),
					io.LimitReader(newBodyReader("7", hundredMiB), 1<<20))
			},
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:  "over a small limit, id found late in the first KiBs",
			input: text(frameOf(`{"jsonrpc":"2.0","method":"echo","params":[1,2,3],"id":"x"}`) + frameOf(`{"id":1}`)),
			opts:  ConnOptions{MaxFrameBytes: 9},
			want: []reply{
				{ID: `"x"`, Code: CodeParseError, Msg: "limit of 9 bytes"},
				{ID: "1", Code: CodeInvalidRequest, Msg: "neither"}, // 8 bytes: within the limit
			},
		},
		{
			name:  "a limit lowered by the handler holds from the next frame",
			input: text(frameOf(request("1", "lower")) + frameOf(request("2", "echo")) + frameOf(`{"id":3,"method":"echo"}`)),
			want: []reply{
				echoed("1", "lower", `{"x":1}`),
				{ID: "2", Code: CodeParseError, Msg: "message of 57 bytes exceeds the limit of 50 bytes"},
				echoed("3", "echo", ""),
			},
		},
		{
			name:  "over the limit with the id beyond the first KiBs",
			input: text(frameOf(`{"jsonrpc":"2.0","method":"echo","params":"` + strings.Repeat("b", 5000) + `","id":3}`)),
			opts:  ConnOptions{MaxFrameBytes: 100},
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "exceeds the limit of 100 bytes"}},
		},
		{
			name:  "garbage line then a frame",
			input: text("hello world\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "has no ':'"}, echo("1")},
		},
		{
			name:  "binary garbage then a frame",
			input: text("\x00\xff\xfe\x01:\x80\r\n\r\n\x7f" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "invalid message header"}, echo("1")},
		},
		{
			name:  "non-numeric length",
			input: text("Content-Length: abc\r\n\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: `invalid Content-Length " abc"`}, echo("1")},
		},
		{
			name:  "negative length",
			input: text("Content-Length: -5\r\n\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "invalid Content-Length"}, echo("1")},
		},
		{
			name:  "overflowing length",
			input: text("Content-Length: 99999999999999999999\r\n\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "invalid Content-Length"}, echo("1")},
		},
		{
			name:  "conflicting lengths",
			input: text("Content-Length: 5\r\nContent-Length: 6\r\n\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "conflicting"}, echo("1")},
		},
		{
			name: "no Content-Length: the body runs into the next header",
			input: text("Content-Type: application/json\r\n\r\n" + request("1", "echo") +
				frameOf(request("2", "echo"))),
			want: []reply{{ID: "null", Code: CodeParseError, Msg: "no Content-Length"}, echo("2")},
		},
		{
			name:  "garbage on the line of the next header",
			input: text("xyz{" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "no valid header name"}, echo("1")},
		},
		{
			name:  "overlong header line",
			input: text("X-Long: " + strings.Repeat("y", 10000) + "\r\n\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "longer than 4096"}, echo("1")},
		},
		{
			name:  "garbage then EOF",
			input: text("garbage\r\nmore garbage"),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "invalid message header"}},
		},
		{
			name:    "EOF inside a header block",
			input:   text(frameOf(request("1", "echo")) + "Content-Length: 10\r\n"),
			want:    []reply{echo("1")},
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "EOF inside a header line",
			input:   text("Content-Len"),
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "EOF inside a body",
			input:   text("Content-Length: 100\r\n\r\n{\"jsonrpc\""),
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:  "empty input",
			input: text(""),
		},
		{
			name:  "empty body",
			input: text("Content-Length: 0\r\n\r\n" + frameOf(request("1", "echo"))),
			want:  []reply{{ID: "null", Code: CodeParseError, Msg: "empty message body"}, echo("1")},
		},
		{
			name: "invalid JSON, id recovered",
			input: text(frameOf(`{"jsonrpc":"2.0","id":42,"method":"echo","params":{"a":}`) +
				frameOf(`{"id" : "abc", "method":"echo", oops}`) +
				frameOf(`{"id":-4,"method":"echo"`) +
				frameOf(request("1", "echo"))),
			want: []reply{
				{ID: "42", Code: CodeParseError, Msg: "parse error: invalid character '}'"},
				{ID: `"abc"`, Code: CodeParseError, Msg: "parse error"},
				{ID: "-4", Code: CodeParseError, Msg: "parse error"},
				echo("1"),
			},
		},
		{
			name: "invalid JSON, id not recoverable",
			input: text(frameOf(`not json`) +
				frameOf(`{"method":"echo",, "id":3}`) +
				frameOf(`{"id":12`) +
				frameOf(`{"id":tru}`) +
				// An id after the first syntax error is not taken: a
				// parser reads nothing past it.
				frameOf(`{"x":tru,"id":5,"method":"echo"}`) +
				frameOf(`{"x":"\u00zz","id":6,"method":"echo"}`)),
			want: []reply{
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
			},
		},
		{
			name: "batches",
			input: text(frameOf(`[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":2,"method":"echo"}]`) +
				frameOf(`[]`) + frameOf(` [1]`) + frameOf(request("3", "echo"))),
			want: []reply{
				{ID: "null", Code: CodeInvalidRequest, Msg: "batches are not supported"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "batches are not supported"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "batches are not supported"},
				echo("3"),
			},
		},
		{
			name:  "non-object values",
			input: text(frameOf(`42`) + frameOf(`"str"`) + frameOf(`null`) + frameOf(`true`)),
			want: []reply{
				{ID: "null", Code: CodeInvalidRequest, Msg: "must be a JSON object"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "must be a JSON object"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "must be a JSON object"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "must be a JSON object"},
			},
		},
		{
			name: "neither request nor response",
			input: text(frameOf(`{"jsonrpc":"2.0","id":9}`) + frameOf(`{}`) +
				frameOf(`{"jsonrpc":"2.0","id":-3,"Method":"echo"}`)),
			want: []reply{
				{ID: "9", Code: CodeInvalidRequest, Msg: "neither a method nor a result"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "neither a method nor a result"},
				{ID: "-3", Code: CodeInvalidRequest, Msg: "neither a method nor a result"},
			},
		},
		{
			name:  "both request and response",
			input: text(frameOf(`{"jsonrpc":"2.0","id":9,"method":"echo","result":1}`)),
			want:  []reply{{ID: "9", Code: CodeInvalidRequest, Msg: "both a method and a result"}},
		},
		{
			name: "bad method and id types",
			input: text(frameOf(`{"jsonrpc":"2.0","id":3,"method":5}`) +
				frameOf(`{"jsonrpc":"2.0","id":true,"method":"echo"}`) +
				frameOf(`{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}`)),
			want: []reply{
				{ID: "3", Code: CodeInvalidRequest, Msg: "method must be a string"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "id must be a string, a number or null"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "id must be a string, a number or null"},
			},
		},
		{
			name:  "member names are case-sensitive",
			input: text(frameOf(`{"jsonrpc":"2.0","id":1,"method":"echo","RESULT":1}`) + frameOf(request("2", "echo"))),
			want:  []reply{echoed("1", "echo", ""), echo("2")},
		},
		{
			name: "ids are answered as sent, however exotic",
			input: text(frameOf(request("-4", "echo")) + frameOf(request("1.5", "echo")) +
				frameOf(request("123456789012345678901234567890", "echo")) + frameOf(request("1e3", "echo")) +
				frameOf(request("-0", "echo")) + frameOf(request("9223372036854775808", "echo")) +
				frameOf(request("0", "echo")) + frameOf(request(`"abc"`, "echo")) + frameOf(request(`"<&>"`, "echo")) +
				frameOf(request(`"\u0000x\u00e9"`, "echo"))),
			want: []reply{
				echo("-4"), echo("1.5"), echo("123456789012345678901234567890"), echo("1e3"), echo("-0"),
				echo("9223372036854775808"), echo("0"), echo(`"abc"`), echo(`"<&>"`), echo(`"\u0000x\u00e9"`),
			},
		},
		{
			name:  "params are the bytes sent",
			input: text(frameOf(exotic)),
			want:  []reply{echoed("5", "echo", exoticParams)},
		},
		{
			name: "notifications are handed on, not answered",
			input: text(frameOf(`{"jsonrpc":"2.0","method":"note"}`) + frameOf(`{"jsonrpc":"2.0","method":"note","id":null,"params":[1]}`) +
				frameOf(request("1", "echo"))),
			want: []reply{
				{Method: "test/seen", Result: map[string]string{"method": "note", "params": ""}},
				{Method: "test/seen", Result: map[string]string{"method": "note", "params": "[1]"}},
				echo("1"),
			},
		},
		{
			name: "responses to calls never made are dropped",
			input: text(frameOf(`{"jsonrpc":"2.0","id":-4,"result":1}`) + frameOf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`) +
				frameOf(`{"jsonrpc":"2.0","result":1}`) + frameOf(`{"jsonrpc":"2.0","id":1.5,"result":{`) +
				frameOf(`{"jsonrpc":"2.0","id":1,"result":1}`) + frameOf(`{"jsonrpc":"2.0","id":"1","result":1}`) +
				frameOf(request("1", "echo"))),
			want: []reply{echo("1")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runConn(t, tt.input(), tt.opts)
			if diff := cmp.Diff(tt.want, got, cmpMsg); diff != "" {
				t.Errorf("frames written (-want +got):\n%s", diff)
			}
			if err != tt.wantErr {
				t.Errorf("Serve returned %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func length(body string) string { return strconv.Itoa(len(body)) }

func text(s string) func() io.Reader {
	return func() io.Reader { return strings.NewReader(s) }
}

// peer is the other end of a Conn under test: it writes frames to the Conn
// and reads the frames the Conn writes.
type peer struct {
	t   *testing.T
	c   *Conn
	w   io.WriteCloser
	br  *bufio.Reader
	out io.Closer
}

// startConn serves a Conn with h (nil: an echoHandler whose held requests
// go to held) and returns its peer. The Conn is closed when the test ends.
func startConn(t *testing.T, opts ConnOptions, held chan<- *Request) *peer {
	t.Helper()
	// OS pipes, whose buffers let the test write while the Conn writes.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := NewConn(inR, outW, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx, echoHandler{c: c, held: held}) }()
	t.Cleanup(func() {
		c.Close()
		outR.Close()
		inW.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		cancel()
	})
	return &peer{t: t, c: c, w: inW, br: bufio.NewReader(outR), out: outR}
}

func (p *peer) send(bodies ...string) {
	p.t.Helper()
	for _, b := range bodies {
		if _, err := io.WriteString(p.w, frameOf(b)); err != nil {
			p.t.Fatal(err)
		}
	}
}

// next reads the next frame the Conn wrote.
func (p *peer) next() reply {
	p.t.Helper()
	body, err := readStrictFrame(p.br)
	if err != nil {
		p.t.Fatal(err)
	}
	r, err := parseReply(body)
	if err != nil {
		p.t.Fatalf("%v: %s", err, body)
	}
	return r
}

func (p *peer) nextBody() string {
	p.t.Helper()
	body, err := readStrictFrame(p.br)
	if err != nil {
		p.t.Fatal(err)
	}
	return string(body)
}

// TestCancelRequest: $/cancelRequest answers the request it names -32800
// with the request's own id text, in read order, cancels its context with
// ErrRequestCancelled, hands the notification on, and drops the handler's
// later answer.
func TestCancelRequest(t *testing.T) {
	held := make(chan *Request, 10)
	p := startConn(t, ConnOptions{}, held)
	cancelOf := func(id string) string {
		return `{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":` + id + `}}`
	}
	seen := reply{Method: "test/seen"}
	seenCancel := func(id string) reply {
		r := seen
		r.Result = map[string]string{"method": "$/cancelRequest", "params": `{"id":` + id + `}`}
		return r
	}
	tests := []struct {
		name     string
		id       string // of the held request
		cancelID string // as the cancel spells it
	}{
		{"negative number", "-4", "-4"},
		{"big number", "123456789012345678901234567890", "123456789012345678901234567890"},
		{"string", `"s"`, `"s"`},
		{"string spelled otherwise", `"\u00e9"`, `"é"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The cancel follows the request directly: it is handled after
			// the request was handed over, never before.
			p.send(`{"jsonrpc":"2.0","id":`+tt.id+`,"method":"hold"}`, cancelOf(tt.cancelID))
			req := <-held
			if diff := cmp.Diff([]reply{{ID: tt.id, Code: CodeRequestCancelled, Msg: "request cancelled"}, seenCancel(tt.cancelID)},
				[]reply{p.next(), p.next()}, cmpMsg); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if err := p.c.Reply(req.ID, "late"); !errors.Is(err, ErrNotInFlight) {
				t.Errorf("Reply after the cancel: %v, want ErrNotInFlight", err)
			}
		})
	}
	t.Run("context", func(t *testing.T) {
		var ctxOf context.Context
		got := make(chan context.Context, 1)
		c := NewConn(strings.NewReader(frameOf(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)+frameOf(cancelOf("1"))), io.Discard, ConnOptions{})
		c.Serve(context.Background(), HandlerFunc(func(ctx context.Context, req *Request) {
			if !req.IsNotification() {
				got <- ctx
			}
		}))
		ctxOf = <-got
		if cause := context.Cause(ctxOf); !errors.Is(cause, ErrRequestCancelled) {
			t.Errorf("request context's cause: %v, want ErrRequestCancelled", cause)
		}
	})
	t.Run("Serve's context ends", func(t *testing.T) {
		// A request in flight when Serve's context ends has its context
		// cancelled with that context's cause, and so has one read after.
		hostR, hostW := io.Pipe()
		defer hostW.Close()
		c := NewConn(hostR, io.Discard, ConnOptions{})
		got := make(chan context.Context, 2)
		serveCtx, stop := context.WithCancelCause(context.Background())
		cause := errors.New("the sidecar is stopping")
		served := make(chan struct{})
		go func() {
			defer close(served)
			c.Serve(serveCtx, HandlerFunc(func(ctx context.Context, req *Request) {
				if !req.IsNotification() {
					got <- ctx
				}
			}))
		}()
		io.WriteString(hostW, frameOf(`{"jsonrpc":"2.0","id":1,"method":"hold"}`))
		inFlight := <-got
		stop(cause)
		<-served
		select {
		case <-inFlight.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the request's context did not end with Serve's")
		}
		if got := context.Cause(inFlight); !errors.Is(got, cause) {
			t.Errorf("cause %v, want %v", got, cause)
		}
		c.mu.Lock()
		ended := c.ended
		c.mu.Unlock()
		if !errors.Is(ended, cause) {
			t.Errorf("requests read after the end would not be cancelled (ended = %v)", ended)
		}
	})
	t.Run("uncancellable methods", func(t *testing.T) {
		held := make(chan *Request, 1)
		p := startConn(t, ConnOptions{Uncancellable: []string{"hold"}}, held)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"hold"}`, cancelOf("1"))
		req := <-held
		if diff := cmp.Diff(seenCancel("1"), p.next()); diff != "" {
			t.Errorf("after the cancel (-want +got):\n%s", diff)
		}
		if err := p.c.Reply(req.ID, "done"); err != nil {
			t.Fatalf("Reply: %v", err)
		}
		if got := p.nextBody(); got != `{"jsonrpc":"2.0","id":1,"result":"done"}` {
			t.Errorf("answer %s", got)
		}
	})
	t.Run("ids not in flight are ignored", func(t *testing.T) {
		p.send(cancelOf("99"), cancelOf("true"), `{"jsonrpc":"2.0","method":"$/cancelRequest","params":"x"}`, request("2", "echo"))
		want := []reply{seenCancel("99"), seenCancel("true"), {Method: "test/seen", Result: map[string]string{"method": "$/cancelRequest", "params": `"x"`}}, echo("2")}
		if diff := cmp.Diff(want, []reply{p.next(), p.next(), p.next(), p.next()}); diff != "" {
			t.Errorf("frames (-want +got):\n%s", diff)
		}
	})
}

// TestDuplicateID: a request whose id is in flight is answered -32600 and
// not handed over; once the first is answered the id is free again.
func TestDuplicateID(t *testing.T) {
	held := make(chan *Request, 10)
	p := startConn(t, ConnOptions{}, held)
	p.send(`{"jsonrpc":"2.0","id":"a","method":"hold"}`, `{"jsonrpc":"2.0","id":"\u0061","method":"hold"}`)
	req := <-held
	if diff := cmp.Diff(reply{ID: `"\u0061"`, Code: CodeInvalidRequest, Msg: `request id "\u0061" is already in flight`}, p.next(), cmpMsg); diff != "" {
		t.Errorf("second request (-want +got):\n%s", diff)
	}
	if err := p.c.Reply(req.ID, "first"); err != nil {
		t.Fatal(err)
	}
	if got := p.nextBody(); got != `{"jsonrpc":"2.0","id":"a","result":"first"}` {
		t.Errorf("answer: %s", got)
	}
	p.send(request(`"a"`, "echo"))
	if diff := cmp.Diff(echo(`"a"`), p.next()); diff != "" {
		t.Errorf("the id again (-want +got):\n%s", diff)
	}
}

// TestReply checks the frames of answers: results encoded once without
// HTML escaping, raw bytes as they are, ids as the peer wrote them.
func TestReply(t *testing.T) {
	big := `"` + strings.Repeat("x", rawWriteThreshold) + `"`
	tests := []struct {
		name   string
		id     string
		result any
		err    error
		want   string
	}{
		{"raw bytes kept", "7", json.RawMessage(`{"b":1, "a":12345678901234567890,"h":"<&>","e":"\u00e9"}`), nil,
			`{"jsonrpc":"2.0","id":7,"result":{"b":1, "a":12345678901234567890,"h":"<&>","e":"\u00e9"}}`},
		{"struct, no HTML escaping", `"x"`, struct {
			S string `json:"s"`
		}{"<&>"}, nil, `{"jsonrpc":"2.0","id":"x","result":{"s":"<&>"}}`},
		{"null", "1", nil, nil, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"empty raw is null", "1", json.RawMessage(nil), nil, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"exotic id", "-4", json.RawMessage(`true`), nil, `{"jsonrpc":"2.0","id":-4,"result":true}`},
		{"large raw written in place", "1e3", json.RawMessage(big), nil, `{"jsonrpc":"2.0","id":1e3,"result":` + big + `}`},
		{"protocol error", "2", nil, fmt.Errorf("wrapped: %w", NewError(CodeUnknownTool, KindUnknownTool, "unknown tool <x>").WithServer("s", "x")),
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32013,"message":"unknown tool <x>","data":{"kind":"unknown_tool","server":"s","tool":"x","retryable":false}}}`},
		{"plain error", "3", nil, errors.New("boom"),
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"boom","data":{"kind":"internal","retryable":false}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			c := NewConn(strings.NewReader(""), &out, ConnOptions{})
			c.trackForTest(tt.id)
			var err error
			if tt.err != nil {
				err = c.ReplyError(json.RawMessage(tt.id), tt.err)
			} else {
				err = c.Reply(json.RawMessage(tt.id), tt.result)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != frameOf(tt.want) {
				t.Errorf("frame:\n got %q\nwant %q", got, frameOf(tt.want))
			}
			if err := c.Reply(json.RawMessage(tt.id), nil); !errors.Is(err, ErrNotInFlight) {
				t.Errorf("second answer: %v, want ErrNotInFlight", err)
			}
		})
	}
}

// trackForTest puts id in flight as if a request with it had been read.
func (c *Conn) trackForTest(id string) {
	ids, key, _ := c.idSlot([]byte(id))
	ids[string(key)] = inflight{id: json.RawMessage(id), cancel: func(error) {}}
}

func TestNotify(t *testing.T) {
	var out bytes.Buffer
	c := NewConn(strings.NewReader(""), &out, ConnOptions{})
	if err := c.Notify("mcp/log", map[string]any{"data": json.RawMessage(`{"b":1,"a":"<&>"}`), "s": "<é>"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("bad", func() {}); err == nil {
		t.Error("Notify with params that do not encode succeeded")
	}
	want := frameOf(`{"jsonrpc":"2.0","method":"mcp/log","params":{"data":{"b":1,"a":"<&>"},"s":"<é>"}}`) +
		frameOf(`{"jsonrpc":"2.0","method":"initialized"}`)
	if got := out.String(); got != want {
		t.Errorf("frames:\n got %q\nwant %q", got, want)
	}
}

// TestCalls checks calls to the peer: the peer's answers arrive, malformed
// or oversized ones fail the call instead of leaving it waiting, a call
// given up is cancelled at the peer, and a closed connection fails calls.
func TestCalls(t *testing.T) {
	tests := []struct {
		name     string
		response func(id string) string // the body the peer answers with
		opts     ConnOptions
		want     string // the call's result
		wantErr  *Error
	}{
		{
			name: "result",
			response: func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"result":{"ok":true, "n":12345678901234567890}}`
			},
			want: `{"ok":true, "n":12345678901234567890}`,
		},
		{
			name: "error",
			response: func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"no such method","data":{"kind":"method_not_found","retryable":true}}}`
			},
			wantErr: &Error{Code: -32601, Message: "no such method", Data: ErrorData{Kind: KindMethodNotFound, Retryable: true}},
		},
		{
			name: "error with other data",
			response: func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":5,"message":"m","data":[1]}}`
			},
			wantErr: &Error{Code: 5, Message: "m"},
		},
		{
			name: "oversized",
			response: func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"result":"` + strings.Repeat("r", 200) + `"}`
			},
			opts:    ConnOptions{MaxFrameBytes: 100},
			wantErr: &Error{Code: CodeParseError, Message: "malformed response: message of ", Data: ErrorData{Kind: KindParseError}},
		},
		{
			name:     "invalid JSON",
			response: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"ok":tru}}` },
			wantErr:  &Error{Code: CodeParseError, Message: "malformed response: parse error", Data: ErrorData{Kind: KindParseError}},
		},
		{
			name:     "error member jsonrpc2 cannot decode",
			response: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"error":"boom"}` },
			wantErr:  &Error{Code: CodeInvalidRequest, Message: "malformed response: ", Data: ErrorData{Kind: KindInvalidRequest}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startConn(t, tt.opts, nil)
			// The peer: read the call, answer it.
			peerErr := make(chan error, 1)
			go func() {
				body, err := readStrictFrame(p.br)
				if err != nil {
					peerErr <- err
					return
				}
				var req struct{ ID json.RawMessage }
				if err := json.Unmarshal(body, &req); err != nil {
					peerErr <- err
					return
				}
				_, err = io.WriteString(p.w, frameOf(tt.response(string(req.ID))))
				peerErr <- err
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := p.c.Call(ctx, "mcp/elicit", map[string]string{"q": "?"})
			if err := <-peerErr; err != nil {
				t.Fatalf("peer: %v", err)
			}
			if tt.wantErr == nil {
				if err != nil || string(res) != tt.want {
					t.Errorf("Call = %s, %v; want %s", res, err, tt.want)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Call error %v, want an *Error", err)
			}
			if diff := cmp.Diff(tt.wantErr, e, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" },
				cmp.Comparer(func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }))); diff != "" {
				t.Errorf("Call error (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("ids count from 1 and the call is written once", func(t *testing.T) {
		p := startConn(t, ConnOptions{}, nil)
		for i := 1; i <= 2; i++ {
			pending, err := p.c.Dispatch("mcp/roots", map[string]string{"sessionId": "s<1>"})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(pending.ID); got != strconv.Itoa(i) {
				t.Errorf("id %s, want %d", got, i)
			}
			if got, want := p.nextBody(), `{"id":`+strconv.Itoa(i)+`,"jsonrpc":"2.0","method":"mcp/roots","params":{"sessionId":"s\u003c1\u003e"}}`; got != want {
				t.Errorf("call written:\n got %s\nwant %s", got, want)
			}
		}
	})

	t.Run("a call given up is cancelled at the peer", func(t *testing.T) {
		p := startConn(t, ConnOptions{}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := p.c.Call(ctx, "mcp/elicit", nil)
			done <- err
		}()
		call := p.next()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Call: %v, want context.Canceled", err)
		}
		want := reply{Method: MethodCancelRequest, Result: map[string]string{"id": call.ID}}
		var got reply
		body := p.nextBody()
		var m struct {
			Method string
			Params struct{ ID json.RawMessage }
		}
		json.Unmarshal([]byte(body), &m)
		got = reply{Method: m.Method, Result: map[string]string{"id": string(m.Params.ID)}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("after giving up (-want +got):\n%s", diff)
		}
		// The late answer is dropped; the connection goes on.
		p.send(`{"jsonrpc":"2.0","id":`+call.ID+`,"result":1}`, request("9", "echo"))
		if diff := cmp.Diff(echo("9"), p.next()); diff != "" {
			t.Errorf("after the late answer (-want +got):\n%s", diff)
		}
	})

	t.Run("closed", func(t *testing.T) {
		p := startConn(t, ConnOptions{}, nil)
		pending, err := p.c.Dispatch("mcp/elicit", nil)
		if err != nil {
			t.Fatal(err)
		}
		p.next()
		p.c.Close()
		if _, err := pending.Wait(context.Background()); !errors.Is(err, ErrClosed) {
			t.Errorf("waiting call after Close: %v, want ErrClosed", err)
		}
		if _, err := p.c.Call(context.Background(), "mcp/elicit", nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Call after Close: %v, want ErrClosed", err)
		}
	})
}

func TestIDSlot(t *testing.T) {
	c := NewConn(strings.NewReader(""), io.Discard, ConnOptions{})
	slot := func(raw string) (string, bool) {
		ids, key, ok := c.idSlot([]byte(raw))
		kind := "string"
		if ok && reflect.ValueOf(ids).Pointer() == reflect.ValueOf(c.numIDs).Pointer() {
			kind = "number"
		}
		return kind + ":" + string(key), ok
	}
	tests := []struct {
		a, b string
		same bool
	}{
		{"7", " 7\n", true},
		{`"abc"`, `"\u0061bc"`, true},
		{`"é"`, `"\u00e9"`, true},
		{"-4", "-4", true},
		{"7", `"7"`, false},
		{"1", "1.0", false},
		{`"a"`, `"b"`, false},
	}
	for _, tt := range tests {
		ka, oka := slot(tt.a)
		kb, okb := slot(tt.b)
		if !oka || !okb || (ka == kb) != tt.same {
			t.Errorf("idSlot(%s) = %q, %v; idSlot(%s) = %q, %v; want same %v", tt.a, ka, oka, tt.b, kb, okb, tt.same)
		}
	}
	for _, bad := range []string{"null", "true", "{}", "[1]", "", "01", `"open`} {
		if k, ok := slot(bad); ok {
			t.Errorf("idSlot(%q) = %q, true; want false", bad, k)
		}
	}
	raw := []byte("123")
	if n := testing.AllocsPerRun(100, func() {
		c.mu.Lock()
		ids, key, _ := c.idSlot(raw)
		_ = ids[string(key)]
		c.mu.Unlock()
	}); n != 0 {
		t.Errorf("looking up a numeric id allocates %v times, want 0", n)
	}
}

// chunkyWriter stores each Write in small pieces, yielding in between, so
// that Writes that are not serialised interleave.
type chunkyWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *chunkyWriter) Write(p []byte) (int, error) {
	const piece = 61
	for i := 0; i < len(p); i += piece {
		w.mu.Lock()
		w.buf.Write(p[i:min(i+piece, len(p))])
		w.mu.Unlock()
		if i%(8*piece) == 0 {
			runtime.Gosched()
		}
	}
	return len(p), nil
}

// TestConcurrentWrites: frames written from many goroutines (replies in
// one write, raw results in three, notifications) never interleave.
func TestConcurrentWrites(t *testing.T) {
	var w chunkyWriter
	c := NewConn(strings.NewReader(""), &w, ConnOptions{})
	const writers, each = 16, 20
	want := map[string]int{}
	for g := range writers {
		for i := range each {
			id := fmt.Sprintf("-%d.%d", g, i)
			c.trackForTest(id)
			want[id] = 1
		}
	}
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				payload, _ := json.Marshal(strings.Repeat("p", (g*each+i)*997%(3*rawWriteThreshold)))
				id := json.RawMessage(fmt.Sprintf("-%d.%d", g, i))
				var err error
				if i%3 == 0 {
					err = c.Notify("note", map[string]any{"id": id, "p": json.RawMessage(payload)})
				} else {
					err = c.Reply(id, json.RawMessage(payload))
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()

	got := map[string]int{}
	br := bufio.NewReader(&w.buf)
	for {
		body, err := readStrictFrame(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", len(got), err)
		}
		var m struct {
			ID     json.RawMessage
			Params struct{ ID json.RawMessage }
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		id := m.ID
		if id == nil {
			id = m.Params.ID
		}
		got[string(id)]++
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids written (-want +got):\n%s", diff)
	}
}

type closeCounter struct {
	io.Reader
	io.Writer
	closes *int
}

func (c closeCounter) Close() error { *c.closes++; return nil }

func TestClose(t *testing.T) {
	t.Run("reader and writer", func(t *testing.T) {
		var rc, wc int
		c := NewConn(closeCounter{Reader: strings.NewReader(""), closes: &rc}, closeCounter{Writer: io.Discard, closes: &wc}, ConnOptions{})
		c.Close()
		c.Close()
		if rc != 1 || wc != 1 {
			t.Errorf("closes: reader %d, writer %d; want 1, 1", rc, wc)
		}
		<-c.Done()
	})
	t.Run("same value", func(t *testing.T) {
		var n int
		rw := closeCounter{Reader: strings.NewReader(""), Writer: io.Discard, closes: &n}
		c := NewConn(rw, rw, ConnOptions{})
		c.Close()
		if n != 1 {
			t.Errorf("closes: %d, want 1", n)
		}
	})
	t.Run("Serve after Close", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		c := NewConn(r, io.Discard, ConnOptions{})
		c.Close()
		if err := c.Serve(context.Background(), echoHandler{c: c}); err != nil {
			t.Errorf("Serve after Close: %v", err)
		}
	})
	t.Run("Close ends Serve", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		c := NewConn(r, io.Discard, ConnOptions{})
		served := make(chan error, 1)
		go func() { served <- c.Serve(context.Background(), echoHandler{c: c}) }()
		c.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v, want nil", err)
		}
	})
	t.Run("the end of Serve's context ends it", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		c := NewConn(r, io.Discard, ConnOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- c.Serve(ctx, echoHandler{c: c}) }()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v, want nil", err)
		}
	})
	t.Run("replies after the input ended", func(t *testing.T) {
		var out bytes.Buffer
		held := make(chan *Request, 1)
		c := NewConn(strings.NewReader(frameOf(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)), &out, ConnOptions{})
		if err := c.Serve(context.Background(), echoHandler{c: c, held: held}); err != nil {
			t.Fatal(err)
		}
		if err := c.Reply((<-held).ID, 1); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), frameOf(`{"jsonrpc":"2.0","id":1,"result":1}`); got != want {
			t.Errorf("written %q, want %q", got, want)
		}
	})
}

func BenchmarkReply(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1024) + `"}],"isError":false}`)
	c := NewConn(strings.NewReader(""), io.Discard, ConnOptions{})
	b.ReportAllocs()
	for b.Loop() {
		c.trackForTest("42")
		if err := c.Reply(json.RawMessage("42"), result); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	one := frameOf(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"sessionId":"s","name":"mcp__srv__echo","arguments":{"text":"` +
		strings.Repeat("y", 1024) + `"}}}`)
	input := strings.Repeat(one, b.N)
	b.ReportAllocs()
	b.SetBytes(int64(len(one)))
	b.ResetTimer()
	c := NewConn(strings.NewReader(input), io.Discard, ConnOptions{})
	h := HandlerFunc(func(ctx context.Context, req *Request) { c.Reply(req.ID, nil) })
	if err := c.Serve(context.Background(), h); err != nil {
		b.Fatal(err)
	}
}

// TestCloseDrainsAReaderItCannotClose: after Close, a reader that is not an
// io.Closer is read to its end, so that the peer writing to it is never
// blocked (the peer's last notifications), and nothing reaches the
// Handler any more.
func TestCloseDrainsAReaderItCannotClose(t *testing.T) {
	pr, pw := io.Pipe()
	handled := make(chan string, 10)
	c := NewConn(struct{ io.Reader }{pr}, io.Discard, ConnOptions{})
	served := make(chan error, 1)
	go func() {
		served <- c.Serve(context.Background(), HandlerFunc(func(_ context.Context, req *Request) { handled <- req.Method }))
	}()
	if _, err := io.WriteString(pw, frameOf(`{"jsonrpc":"2.0","method":"before"}`)); err != nil {
		t.Fatal(err)
	}
	if got := <-handled; got != "before" {
		t.Fatalf("handled %q", got)
	}
	c.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	// The peer goes on writing after Close (io.Pipe blocks each write
	// until it is read): answers, which go to the pending calls' side of
	// the read loop, and notifications.
	for i := range 10 {
		if _, err := io.WriteString(pw, frameOf(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i+1))); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(pw, frameOf(`{"jsonrpc":"2.0","method":"after"}`)); err != nil {
			t.Fatal(err)
		}
	}
	pw.Close()
	select {
	case m := <-handled:
		t.Errorf("%q reached the handler after Close", m)
	default:
	}
}

// TestReadLoopDoesNotWaitForThePeer: the answers the read loop gives
// itself ($/cancelRequest's -32800, a malformed message's error) and a
// handler's answer given within Handle do not wait for the peer to read
// them: the read loop reads on. Two peers that both answered on their read
// loops over a pipe with no room each waited for the other's reading for
// ever (seen as a hung tools/call when the host and the sidecar cancelled
// each other's requests at once).
func TestReadLoopDoesNotWaitForThePeer(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // nobody reads outR until the end: no room at all
	c := NewConn(inR, outW, ConnOptions{})
	held := make(chan *Request, 10)
	served := make(chan error, 1)
	eh := echoHandler{c: c, held: held}
	h := HandlerFunc(func(ctx context.Context, req *Request) {
		if !req.IsNotification() { // echoHandler's notice of a notification would wait
			eh.Handle(ctx, req)
		}
	})
	go func() { served <- c.Serve(context.Background(), h) }()
	go func() {
		io.WriteString(inW, frameOf(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)+
			frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)+
			"garbage\r\n\r\n"+
			frameOf(request("2", "echo"))+
			frameOf(`{"jsonrpc":"2.0","id":3,"method":"hold"}`))
	}()
	for _, want := range []string{"1", "3"} {
		select {
		case req := <-held:
			if string(req.ID) != want {
				t.Fatalf("held request %s, want %s", req.ID, want)
			}
		case <-time.After(30 * time.Second): // a safety net, never the ordering
			t.Fatalf("request %s never reached the handler: the read loop waits for the peer", want)
		}
	}
	// Now the peer reads: every answer is there, in the order given.
	inW.Close()
	got := readReplies(t, outR)
	want := []reply{{ID: "1", Code: CodeRequestCancelled, Msg: "request cancelled"}, {ID: "null", Code: CodeParseError}, echo("2")}
	if diff := cmp.Diff(want, got, cmpMsg); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
