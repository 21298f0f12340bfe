package protocol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sourcegraph/jsonrpc2"
)

// frameOf returns body framed as the host sends it.
func frameOf(body string) string {
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

func request(id, method string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"x":1}}`, id, method)
}

// reply is what the test sees of one frame the sidecar side wrote.
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

// echoHandler answers every request with its method, the id it saw and the
// stream's LastBody, and answers $/cancelRequest notifications with a
// test/canonical notification carrying CanonicalID of their id.
type echoHandler struct{ s *Stream }

func (h echoHandler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	body := string(h.s.LastBody())
	if req.Method == "$/cancelRequest" {
		var p struct{ ID json.RawMessage }
		if req.Params != nil {
			json.Unmarshal(*req.Params, &p)
		}
		id, ok := h.s.CanonicalID(p.ID)
		conn.Notify(ctx, "test/canonical", map[string]string{
			"id": id.String(), "ok": strconv.FormatBool(ok), "wire": string(WireID(id)),
		})
		return
	}
	if req.Notif {
		return
	}
	conn.Reply(ctx, req.ID, map[string]string{"method": req.Method, "id": req.ID.String(), "body": body})
}

// recordingStream keeps the error that ended the read loop.
type recordingStream struct {
	*Stream
	once sync.Once
	errc chan error
}

func (r *recordingStream) ReadObject(v any) error {
	err := r.Stream.ReadObject(v)
	if err != nil {
		r.once.Do(func() { r.errc <- err })
	}
	return err
}

// runConn drives a jsonrpc2.Conn over the stream with input as the host's
// output, then closes the input. It returns every frame the sidecar side
// wrote and the error that ended its read loop.
func runConn(t *testing.T, input io.Reader, opts StreamOptions) ([]reply, error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := NewStream(inR, outW, opts)
	rs := &recordingStream{Stream: s, errc: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := jsonrpc2.NewConn(ctx, rs, echoHandler{s}, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	defer conn.Close()

	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(inW, input)
		inW.Close()
	}()
	replies := readReplies(t, outR) // until the conn closes the stream
	<-conn.DisconnectNotify()
	<-copied
	return replies, <-rs.errc
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
			t.Fatalf("reading frame %d from sidecar: %v", len(out), err)
		}
		rep, err := parseReply(body)
		if err != nil {
			t.Fatalf("frame %d from sidecar: %v: %s", len(out), err, body)
		}
		out = append(out, rep)
	}
}

func readStrictFrame(br *bufio.Reader) ([]byte, error) {
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
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if !json.Valid(body) {
		return nil, fmt.Errorf("invalid JSON body %q", body)
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

// echoed is the reply echoHandler gives to a request.
func echoed(wireID, seenID, method, body string) reply {
	return reply{ID: wireID, Result: map[string]string{"method": method, "id": seenID, "body": body}}
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

func TestStreamOverConn(t *testing.T) {
	const hundredMiB = 100 << 20
	exotic := `{ "params" : {"z":1,"a":"\u00e9 é <&>","n":12345678901234567890123,"f":1.50},` +
		"\n\t" + `"method":"echo", "jsonrpc":"2.0" ,"id":5 }`

	tests := []struct {
		name    string
		input   func() io.Reader
		opts    StreamOptions
		want    []reply
		wantErr error
	}{
		{
			name:    "request and response",
			input:   text(frameOf(request("1", "echo"))),
			want:    []reply{echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name: "Content-Type header before and after",
			input: text(
				"Content-Length: " + length(request("1", "echo")) + "\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" +
					request("1", "echo") +
					"Content-Type: application/json\r\nContent-Length: " + length(request("2", "echo")) + "\r\n\r\n" + request("2", "echo")),
			want: []reply{
				echoed("1", "1", "echo", request("1", "echo")),
				echoed("2", "2", "echo", request("2", "echo")),
			},
			wantErr: io.EOF,
		},
		{
			name: "header names in other case, no space, bare newlines, other headers",
			input: text(
				"content-length: " + length(request("1", "echo")) + "\r\n\r\n" + request("1", "echo") +
					"CONTENT-LENGTH:" + length(request("2", "echo")) + "\r\nX-Custom: yes\r\n\r\n" + request("2", "echo") +
					"Content-length:\t" + length(request("3", "echo")) + "\n\n" + request("3", "echo")),
			want: []reply{
				echoed("1", "1", "echo", request("1", "echo")),
				echoed("2", "2", "echo", request("2", "echo")),
				echoed("3", "3", "echo", request("3", "echo")),
			},
			wantErr: io.EOF,
		},
		{
			name:  "blank lines between frames are skipped",
			input: text("\r\n\n" + frameOf(request("1", "echo")) + "\r\n" + frameOf(request("2", "echo"))),
			want: []reply{
				echoed("1", "1", "echo", request("1", "echo")),
				echoed("2", "2", "echo", request("2", "echo")),
			},
			wantErr: io.EOF,
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
				echoed("8", "8", "echo", request("8", "echo")),
			},
			wantErr: io.EOF,
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
			opts:  StreamOptions{MaxFrameBytes: 9},
			want: []reply{
				{ID: `"x"`, Code: CodeParseError, Msg: "limit of 9 bytes"},
				{ID: "1", Code: CodeInvalidRequest, Msg: "neither"}, // 8 bytes: within the limit
			},
			wantErr: io.EOF,
		},
		{
			name:    "over the limit with the id beyond the first KiBs",
			input:   text(frameOf(`{"jsonrpc":"2.0","method":"echo","params":"` + strings.Repeat("b", 5000) + `","id":3}`)),
			opts:    StreamOptions{MaxFrameBytes: 100},
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "exceeds the limit of 100 bytes"}},
			wantErr: io.EOF,
		},
		{
			name:    "garbage line then a frame",
			input:   text("hello world\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "has no ':'"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "binary garbage then a frame",
			input:   text("\x00\xff\xfe\x01:\x80\r\n\r\n\x7f" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "invalid message header"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "non-numeric length",
			input:   text("Content-Length: abc\r\n\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: `invalid Content-Length " abc"`}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "negative length",
			input:   text("Content-Length: -5\r\n\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "invalid Content-Length"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "overflowing length",
			input:   text("Content-Length: 99999999999999999999\r\n\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "invalid Content-Length"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "conflicting lengths",
			input:   text("Content-Length: 5\r\nContent-Length: 6\r\n\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "conflicting"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name: "no Content-Length: the body runs into the next header",
			input: text("Content-Type: application/json\r\n\r\n" + request("1", "echo") +
				frameOf(request("2", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "no Content-Length"}, echoed("2", "2", "echo", request("2", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "garbage on the line of the next header",
			input:   text("xyz{" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "no valid header name"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "overlong header line",
			input:   text("X-Long: " + strings.Repeat("y", 10000) + "\r\n\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "longer than 4096"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "garbage then EOF",
			input:   text("garbage\r\nmore garbage"),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "invalid message header"}},
			wantErr: io.EOF,
		},
		{
			name:    "EOF inside a header block",
			input:   text(frameOf(request("1", "echo")) + "Content-Length: 10\r\n"),
			want:    []reply{echoed("1", "1", "echo", request("1", "echo"))},
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
			name:    "empty input",
			input:   text(""),
			wantErr: io.EOF,
		},
		{
			name:    "empty body",
			input:   text("Content-Length: 0\r\n\r\n" + frameOf(request("1", "echo"))),
			want:    []reply{{ID: "null", Code: CodeParseError, Msg: "empty message body"}, echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
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
				echoed("1", "1", "echo", request("1", "echo")),
			},
			wantErr: io.EOF,
		},
		{
			name: "invalid JSON, id not recoverable",
			input: text(frameOf(`not json`) +
				frameOf(`{"method":"echo",, "id":3}`) +
				frameOf(`{"id":12`) +
				frameOf(`{"id":tru}`)),
			want: []reply{
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
				{ID: "null", Code: CodeParseError, Msg: "parse error"},
			},
			wantErr: io.EOF,
		},
		{
			name: "batches",
			input: text(frameOf(`[{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":2,"method":"echo"}]`) +
				frameOf(`[]`) + frameOf(` [1]`) + frameOf(request("3", "echo"))),
			want: []reply{
				{ID: "null", Code: CodeInvalidRequest, Msg: "batches are not supported"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "batches are not supported"},
				{ID: "null", Code: CodeInvalidRequest, Msg: "batches are not supported"},
				echoed("3", "3", "echo", request("3", "echo")),
			},
			wantErr: io.EOF,
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
			wantErr: io.EOF,
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
			wantErr: io.EOF,
		},
		{
			name:    "both request and response",
			input:   text(frameOf(`{"jsonrpc":"2.0","id":9,"method":"echo","result":1}`)),
			want:    []reply{{ID: "9", Code: CodeInvalidRequest, Msg: "both a method and a result"}},
			wantErr: io.EOF,
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
			wantErr: io.EOF,
		},
		{
			// jsonrpc2's own decoder matches "RESULT" case-insensitively and
			// refuses the message: the stream answers instead of failing.
			name:    "refused by jsonrpc2's decoder",
			input:   text(frameOf(`{"jsonrpc":"2.0","id":1,"method":"echo","RESULT":1}`) + frameOf(request("2", "echo"))),
			want:    []reply{{ID: "1", Code: CodeInvalidRequest, Msg: "invalid request"}, echoed("2", "2", "echo", request("2", "echo"))},
			wantErr: io.EOF,
		},
		{
			name: "ids jsonrpc2.ID cannot hold are answered as sent",
			input: text(frameOf(request("-4", "echo")) + frameOf(request("1.5", "echo")) +
				frameOf(request("123456789012345678901234567890", "echo")) + frameOf(request("1e3", "echo")) +
				frameOf(request("-0", "echo")) + frameOf(request("9223372036854775808", "echo"))),
			want: []reply{
				echoed("-4", strconv.Quote(ReservedIDPrefix+"-4"), "echo", request("-4", "echo")),
				echoed("1.5", strconv.Quote(ReservedIDPrefix+"1.5"), "echo", request("1.5", "echo")),
				echoed("123456789012345678901234567890", strconv.Quote(ReservedIDPrefix+"123456789012345678901234567890"), "echo",
					request("123456789012345678901234567890", "echo")),
				echoed("1e3", strconv.Quote(ReservedIDPrefix+"1e3"), "echo", request("1e3", "echo")),
				echoed("-0", strconv.Quote(ReservedIDPrefix+"-0"), "echo", request("-0", "echo")),
				echoed("9223372036854775808", strconv.Quote(ReservedIDPrefix+"9223372036854775808"), "echo", request("9223372036854775808", "echo")),
			},
			wantErr: io.EOF,
		},
		{
			name: "ordinary ids pass unchanged",
			input: text(frameOf(request("0", "echo")) + frameOf(request("9223372036854775807", "echo")) +
				frameOf(request(`"abc"`, "echo")) + frameOf(request(`"<&>"`, "echo"))),
			want: []reply{
				echoed("0", "0", "echo", request("0", "echo")),
				echoed("9223372036854775807", "9223372036854775807", "echo", request("9223372036854775807", "echo")),
				echoed(`"abc"`, `"abc"`, "echo", request(`"abc"`, "echo")),
				echoed(`"\u003c\u0026\u003e"`, `"<&>"`, "echo", request(`"<&>"`, "echo")),
			},
			wantErr: io.EOF,
		},
		{
			name:  "string id that looks reserved is kept apart",
			input: text(frameOf(request(`"\u0000mcp-sidecar-id:7"`, "echo"))),
			want: []reply{echoed(`"\u0000mcp-sidecar-id:7"`, strconv.Quote(ReservedIDPrefix+`"\u0000mcp-sidecar-id:7"`), "echo",
				request(`"\u0000mcp-sidecar-id:7"`, "echo"))},
			wantErr: io.EOF,
		},
		{
			name:    "LastBody is the bytes sent",
			input:   text(frameOf(exotic)),
			want:    []reply{echoed("5", "5", "echo", exotic)},
			wantErr: io.EOF,
		},
		{
			name: "notifications are not answered",
			input: text(frameOf(`{"jsonrpc":"2.0","method":"note"}`) + frameOf(`{"jsonrpc":"2.0","method":"note","id":null}`) +
				frameOf(request("1", "echo"))),
			want:    []reply{echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name: "responses with ids the sidecar never issues are dropped",
			input: text(frameOf(`{"jsonrpc":"2.0","id":-4,"result":1}`) + frameOf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`) +
				frameOf(`{"jsonrpc":"2.0","result":1}`) + frameOf(`{"jsonrpc":"2.0","id":1.5,"result":{`) +
				frameOf(request("1", "echo"))),
			want:    []reply{echoed("1", "1", "echo", request("1", "echo"))},
			wantErr: io.EOF,
		},
		{
			name: "$/cancelRequest ids map to the handler's ids",
			input: text(frameOf(request("-4", "echo")) + frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id": -4}}`) +
				frameOf(request(`"s"`, "echo")) + frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":"s"}}`) +
				frameOf(request(`7`, "echo")) + frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`) +
				frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":true}}`)),
			want: []reply{
				echoed("-4", strconv.Quote(ReservedIDPrefix+"-4"), "echo", request("-4", "echo")),
				{Method: "test/canonical", Result: map[string]string{"id": strconv.Quote(ReservedIDPrefix + "-4"), "ok": "true", "wire": "-4"}},
				echoed(`"s"`, `"s"`, "echo", request(`"s"`, "echo")),
				{Method: "test/canonical", Result: map[string]string{"id": `"s"`, "ok": "true", "wire": `"s"`}},
				echoed("7", "7", "echo", request("7", "echo")),
				{Method: "test/canonical", Result: map[string]string{"id": "7", "ok": "true", "wire": "7"}},
				{Method: "test/canonical", Result: map[string]string{"id": "0", "ok": "false", "wire": "0"}},
			},
			wantErr: io.EOF,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runConn(t, tt.input(), tt.opts)
			if diff := cmp.Diff(tt.want, got, cmpMsg); diff != "" {
				t.Errorf("frames from sidecar (-want +got):\n%s", diff)
			}
			if err != tt.wantErr {
				t.Errorf("read loop ended with %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func length(body string) string { return strconv.Itoa(len(body)) }

func text(s string) func() io.Reader {
	return func() io.Reader { return strings.NewReader(s) }
}

// TestHostResponses checks the responses the host sends to the sidecar's
// own calls: ordinary ones arrive, malformed or oversized ones fail the
// call instead of leaving it waiting.
func TestHostResponses(t *testing.T) {
	tests := []struct {
		name     string
		response func(id string) string // the body the host answers with
		opts     StreamOptions
		want     string // the call's result, or its error
	}{
		{
			name:     "result",
			response: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"ok":true}}` },
			want:     `{"ok":true}`,
		},
		{
			name: "error",
			response: func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"no such method"}}`
			},
			want: "jsonrpc2: code -32601 message: no such method",
		},
		{
			name: "oversized",
			response: func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"result":"` + strings.Repeat("r", 200) + `"}`
			},
			opts: StreamOptions{MaxFrameBytes: 100},
			want: "jsonrpc2: code -32700 message: malformed response from host: message of ",
		},
		{
			name:     "invalid JSON",
			response: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{"ok":tru}}` },
			want:     "jsonrpc2: code -32700 message: malformed response from host: parse error",
		},
		{
			name:     "error member jsonrpc2 cannot decode",
			response: func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"error":"boom"}` },
			want:     "jsonrpc2: code -32600 message: malformed response from host: invalid request",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			s := NewStream(inR, outW, tt.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn := jsonrpc2.NewConn(ctx, s, echoHandler{s}, jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
			defer conn.Close()

			// The host: read the sidecar's request, answer it.
			hostErr := make(chan error, 1)
			go func() {
				body, err := readStrictFrame(bufio.NewReader(outR))
				if err != nil {
					hostErr <- err
					return
				}
				var req struct{ ID json.RawMessage }
				if err := json.Unmarshal(body, &req); err != nil {
					hostErr <- err
					return
				}
				_, err = io.WriteString(inW, frameOf(tt.response(string(req.ID))))
				hostErr <- err
			}()
			var result json.RawMessage
			err := conn.Call(ctx, "mcp/elicit", map[string]string{"q": "?"}, &result)
			got := string(result)
			if err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("call returned %q, want %q", got, tt.want)
			}
			if err := <-hostErr; err != nil {
				t.Fatalf("host side: %v", err)
			}
		})
	}
}

func TestCanonicalID(t *testing.T) {
	s := NewStream(strings.NewReader(""), io.Discard, StreamOptions{})
	reserved := func(raw string) jsonrpc2.ID { return jsonrpc2.ID{Str: ReservedIDPrefix + raw, IsString: true} }
	tests := []struct {
		raw    string
		want   jsonrpc2.ID
		wantOK bool
	}{
		{raw: "7", want: jsonrpc2.ID{Num: 7}, wantOK: true},
		{raw: " 7\n", want: jsonrpc2.ID{Num: 7}, wantOK: true},
		{raw: "0", want: jsonrpc2.ID{Num: 0}, wantOK: true},
		{raw: "9223372036854775807", want: jsonrpc2.ID{Num: 9223372036854775807}, wantOK: true},
		{raw: "9223372036854775808", want: reserved("9223372036854775808"), wantOK: true},
		{raw: "-4", want: reserved("-4"), wantOK: true},
		{raw: "1.5", want: reserved("1.5"), wantOK: true},
		{raw: "2E2", want: reserved("2E2"), wantOK: true},
		{raw: `"abc"`, want: jsonrpc2.ID{Str: "abc", IsString: true}, wantOK: true},
		{raw: `"\u00e9"`, want: jsonrpc2.ID{Str: "é", IsString: true}, wantOK: true},
		{raw: `"\u0000x"`, want: jsonrpc2.ID{Str: "\x00x", IsString: true}, wantOK: true},
		{raw: `"\u0000mcp-sidecar-id:1"`, want: reserved(`"\u0000mcp-sidecar-id:1"`), wantOK: true},
		{raw: "null"},
		{raw: "true"},
		{raw: "{}"},
		{raw: ""},
		{raw: "01"},
		{raw: `"open`},
	}
	for _, tt := range tests {
		got, ok := s.CanonicalID(json.RawMessage(tt.raw))
		if diff := cmp.Diff(tt.want, got); diff != "" || ok != tt.wantOK {
			t.Errorf("CanonicalID(%q) = %v, %v; want %v, %v (-want +got):\n%s", tt.raw, got, ok, tt.want, tt.wantOK, diff)
		}
		if ok {
			if wire := string(WireID(got)); got.IsString && wire != strings.TrimSpace(tt.raw) && !strings.HasPrefix(got.Str, ReservedIDPrefix) {
				// Plain strings re-encode; only check they decode back.
				var back string
				if err := json.Unmarshal([]byte(wire), &back); err != nil || back != got.Str {
					t.Errorf("WireID(%v) = %s, does not decode to %q", got, wire, got.Str)
				}
			} else if wire != strings.TrimSpace(tt.raw) {
				t.Errorf("WireID(%v) = %s, want %s", got, wire, strings.TrimSpace(tt.raw))
			}
		}
	}
}

func TestWriteObjectRestoresIDs(t *testing.T) {
	result := json.RawMessage(`{"a":1}`)
	tests := []struct {
		name string
		obj  any
		want string
	}{
		{
			name: "rewritten number",
			obj:  &jsonrpc2.Response{ID: jsonrpc2.ID{Str: ReservedIDPrefix + "-4", IsString: true}, Result: &result},
			want: `{"id":-4,"result":{"a":1},"jsonrpc":"2.0"}`,
		},
		{
			name: "rewritten string",
			obj:  &jsonrpc2.Response{ID: jsonrpc2.ID{Str: ReservedIDPrefix + `"\u0000mcp-sidecar-id:1"`, IsString: true}, Error: &jsonrpc2.Error{Code: -1, Message: "m"}},
			want: `{"id":"\u0000mcp-sidecar-id:1","error":{"code":-1,"message":"m"},"jsonrpc":"2.0"}`,
		},
		{
			name: "forged reserved id is left alone",
			obj:  &jsonrpc2.Response{ID: jsonrpc2.ID{Str: ReservedIDPrefix + `1,"x":2`, IsString: true}, Result: &result},
			want: `{"id":"\u0000mcp-sidecar-id:1,\"x\":2","result":{"a":1},"jsonrpc":"2.0"}`,
		},
		{
			name: "ordinary response",
			obj:  &jsonrpc2.Response{ID: jsonrpc2.ID{Num: 3}, Result: &result},
			want: `{"id":3,"result":{"a":1},"jsonrpc":"2.0"}`,
		},
		{
			name: "request",
			obj:  &jsonrpc2.Request{ID: jsonrpc2.ID{Num: 1}, Method: "mcp/roots"},
			want: `{"id":1,"jsonrpc":"2.0","method":"mcp/roots"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := NewStream(strings.NewReader(""), &out, StreamOptions{})
			if err := s.WriteObject(tt.obj); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(frameOf(tt.want), out.String()); diff != "" {
				t.Errorf("frame (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteObjectError(t *testing.T) {
	s := NewStream(strings.NewReader(""), io.Discard, StreamOptions{})
	if err := s.WriteObject(func() {}); err == nil {
		t.Error("WriteObject of a func succeeded")
	}
	var out bytes.Buffer
	s = NewStream(strings.NewReader(""), &out, StreamOptions{})
	if err := s.WriteObject(&jsonrpc2.Response{}); err == nil {
		t.Error("WriteObject of a response with neither result nor error succeeded")
	}
	if out.Len() != 0 {
		t.Errorf("failed WriteObject wrote %q", out.String())
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

func TestConcurrentWriteObject(t *testing.T) {
	var w chunkyWriter
	s := NewStream(strings.NewReader(""), &w, StreamOptions{})
	const writers, each = 16, 20
	var wg sync.WaitGroup
	want := map[string]int{}
	for g := range writers {
		for i := range each {
			// Rewritten ids go through the restoring path; sizes vary
			// from tiny to several buffers.
			id := fmt.Sprintf("-%d.%d", g, i)
			want[id] = 1
		}
	}
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				payload, _ := json.Marshal(strings.Repeat("p", (g*each+i)*97%20000))
				raw := json.RawMessage(payload)
				id := jsonrpc2.ID{Str: ReservedIDPrefix + fmt.Sprintf("-%d.%d", g, i), IsString: true}
				if i%2 == 0 {
					// Half plain: exercises the pooled-buffer path.
					id = jsonrpc2.ID{Str: fmt.Sprintf("-%d.%d", g, i), IsString: true}
				}
				if err := s.WriteObject(&jsonrpc2.Response{ID: id, Result: &raw}); err != nil {
					t.Error(err)
				}
			}
		}()
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
		var m struct{ ID json.RawMessage }
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		id := string(m.ID)
		if s, err := strconv.Unquote(id); err == nil {
			id = s // the plain string ids
		}
		got[id]++
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
		s := NewStream(closeCounter{Reader: strings.NewReader(""), closes: &rc}, closeCounter{Writer: io.Discard, closes: &wc}, StreamOptions{})
		s.Close()
		s.Close()
		if rc != 1 || wc != 1 {
			t.Errorf("closes: reader %d, writer %d; want 1, 1", rc, wc)
		}
	})
	t.Run("same value", func(t *testing.T) {
		var n int
		rw := closeCounter{Reader: strings.NewReader(""), Writer: io.Discard, closes: &n}
		s := NewStream(rw, rw, StreamOptions{})
		s.Close()
		if n != 1 {
			t.Errorf("closes: %d, want 1", n)
		}
	})
	t.Run("not closers", func(t *testing.T) {
		s := NewStream(strings.NewReader(""), io.Discard, StreamOptions{})
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Run("read after close", func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		s := NewStream(r, io.Discard, StreamOptions{})
		s.Close()
		var v json.RawMessage
		if err := s.ReadObject(&v); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("ReadObject after Close: %v, want %v", err, io.ErrClosedPipe)
		}
	})
}

// TestReadObjectFreshTarget checks that a message the target type refuses
// leaves nothing behind in it for the next message.
func TestReadObjectFreshTarget(t *testing.T) {
	type target struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		A      int    `json:"a"`
		B      int    `json:"b"`
	}
	input := frameOf(`{"id":1,"method":"x","a":5,"b":"not a number"}`) + frameOf(`{"id":2,"method":"y"}`)
	var out bytes.Buffer
	s := NewStream(strings.NewReader(input), &out, StreamOptions{})
	var got target
	if err := s.ReadObject(&got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(target{ID: 2, Method: "y"}, got); diff != "" {
		t.Errorf("second message (-want +got):\n%s", diff)
	}
	replies := readReplies(t, &out)
	want := []reply{{ID: "1", Code: CodeInvalidRequest, Msg: "cannot unmarshal string"}}
	if diff := cmp.Diff(want, replies, cmpMsg); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if err := s.ReadObject(&got); err != io.EOF {
		t.Errorf("ReadObject at the end: %v, want EOF", err)
	}
}

func BenchmarkWriteObject(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1024) + `"}],"isError":false}`)
	resp := &jsonrpc2.Response{ID: jsonrpc2.ID{Num: 42}, Result: &result}
	s := NewStream(strings.NewReader(""), io.Discard, StreamOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if err := s.WriteObject(resp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadObject(b *testing.B) {
	one := frameOf(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"sessionId":"s","name":"mcp__srv__echo","arguments":{"text":"` +
		strings.Repeat("y", 1024) + `"}}}`)
	input := strings.NewReader(strings.Repeat(one, 1000))
	s := NewStream(input, io.Discard, StreamOptions{})
	b.ReportAllocs()
	b.SetBytes(int64(len(one)))
	for b.Loop() {
		var v json.RawMessage
		if err := s.ReadObject(&v); err == io.EOF {
			input.Seek(0, io.SeekStart)
			s = NewStream(input, io.Discard, StreamOptions{})
		} else if err != nil {
			b.Fatal(err)
		}
	}
}

func TestWriteResult(t *testing.T) {
	tests := []struct {
		name   string
		id     jsonrpc2.ID
		result any
		want   string
	}{
		{"raw bytes kept", jsonrpc2.ID{Num: 7}, json.RawMessage(`{"b":1, "a":12345678901234567890,"h":"<&>","e":"\u00e9"}`),
			`{"jsonrpc":"2.0","id":7,"result":{"b":1, "a":12345678901234567890,"h":"<&>","e":"\u00e9"}}`},
		{"struct, no HTML escaping", jsonrpc2.ID{Str: "x", IsString: true}, struct {
			S string `json:"s"`
		}{"<&>"}, `{"jsonrpc":"2.0","id":"x","result":{"s":"<&>"}}`},
		{"null", jsonrpc2.ID{Num: 1}, nil, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"empty raw is null", jsonrpc2.ID{Num: 1}, json.RawMessage(nil), `{"jsonrpc":"2.0","id":1,"result":null}`},
		{"rewritten id restored", jsonrpc2.ID{Str: ReservedIDPrefix + "-4", IsString: true}, json.RawMessage(`true`),
			`{"jsonrpc":"2.0","id":-4,"result":true}`},
		{"large raw written in place", jsonrpc2.ID{Str: ReservedIDPrefix + "-4", IsString: true}, json.RawMessage(`"` + strings.Repeat("x", rawWriteThreshold) + `"`),
			`{"jsonrpc":"2.0","id":-4,"result":"` + strings.Repeat("x", rawWriteThreshold) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			s := NewStream(strings.NewReader(""), &out, StreamOptions{})
			if err := s.WriteResult(tt.id, tt.result); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(tt.want), tt.want)
			if got := out.String(); got != want {
				t.Errorf("frame:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestOmitRequestParams(t *testing.T) {
	params := `{"b":1, "a":[12345678901234567890, "\u00e9<&>"]}`
	frames := ""
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`,
		`{"jsonrpc":"2.0","id":-4,"method":"tools/call","params":` + params + `}`,
		`{"jsonrpc":"2.0","method":"note"}`,
	} {
		frames += fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	s := NewStream(strings.NewReader(frames), io.Discard, StreamOptions{OmitRequestParams: true})
	for i, wantParams := range []string{params, params, ""} {
		var handed map[string]json.RawMessage
		if err := s.ReadObject(&handed); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if _, ok := handed["params"]; ok {
			t.Errorf("frame %d: params handed to jsonrpc2: %s", i, handed["params"])
		}
		if string(handed["method"]) == "" {
			t.Errorf("frame %d: no method handed", i)
		}
		if got := string(s.LastParams()); got != wantParams {
			t.Errorf("frame %d: LastParams = %q, want %q", i, got, wantParams)
		}
	}
}
