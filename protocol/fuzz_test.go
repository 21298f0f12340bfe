package protocol

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
)

// FuzzConn feeds arbitrary bytes to a Conn whose handler keeps every
// request in flight, and reads until the input ends. It must not panic or
// hang, every frame it writes must be a well-formed JSON-RPC error reply,
// every request it hands over must carry a string or number id and a
// method, and what it allocates must be bounded by the input rather than
// by the lengths the input announces.
func FuzzConn(f *testing.F) {
	f.Add([]byte(frameOf(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`)))
	f.Add([]byte("Content-Length: 104857600\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":7,"))
	f.Add([]byte(frameOf(`{"jsonrpc":"2.0","id":-4,"method":"hold"}`) + frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":-4}}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		c := NewConn(bytes.NewReader(data), &out, ConnOptions{})
		handed := 0
		var bad error
		h := HandlerFunc(func(_ context.Context, req *Request) {
			handed++
			if req.ID != nil && !validIDText(req.ID) && bad == nil {
				bad = fmt.Errorf("request handed over with id %q", req.ID)
			}
			if req.Params != nil && !json.Valid(req.Params) && bad == nil {
				bad = fmt.Errorf("request handed over with params %q", req.Params)
			}
		})

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := c.Serve(context.Background(), h)
		runtime.ReadMemStats(&after)
		if bad != nil {
			t.Fatal(bad)
		}
		if handed > len(data) {
			t.Fatalf("%d messages from %d bytes", handed, len(data))
		}
		if err != nil && err != io.ErrUnexpectedEOF {
			t.Fatalf("Serve returned %v, want nil or unexpected EOF", err)
		}

		// The Conn's own replies.
		replies := 0
		br := bufio.NewReader(&out)
		for {
			body, err := readStrictFrame(br)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("reply %d: %v", replies, err)
			}
			if err := checkErrorReply(body); err != nil {
				t.Fatalf("reply %d: %v: %s", replies, err, body)
			}
			replies++
		}

		// Each header block may allocate an initial body buffer, a reply or
		// a request in flight; beyond that, memory follows the bytes
		// actually received.
		blocks := bytes.Count(bytes.ToLower(data), []byte("content-length")) + 1
		limit := uint64(256<<10 + blocks*(96<<10) + 64*len(data))
		if got := after.TotalAlloc - before.TotalAlloc; got > limit {
			t.Fatalf("allocated %d bytes for %d input bytes (%d header blocks), limit %d", got, len(data), blocks, limit)
		}
	})
}

// checkErrorReply checks that body is an error reply the Conn may write on
// its own.
func checkErrorReply(body []byte) error {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int64     `json:"code"`
			Message string    `json:"message"`
			Data    ErrorData `json:"data"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	switch {
	case m.JSONRPC != "2.0":
		return fmt.Errorf("jsonrpc is %q", m.JSONRPC)
	case m.Error == nil:
		return errors.New("no error member")
	case m.Error.Code != CodeParseError && m.Error.Code != CodeInvalidRequest && m.Error.Code != CodeRequestCancelled:
		return fmt.Errorf("code %d", m.Error.Code)
	case m.Error.Message == "" || m.Error.Data.Kind == "":
		return errors.New("no message or kind")
	case m.ID == nil:
		return errors.New("no id member")
	case string(m.ID) != "null" && !validIDText(m.ID):
		return fmt.Errorf("id %s is not a string, number or null", m.ID)
	}
	return nil
}
