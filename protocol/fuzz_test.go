package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// wireMessage decodes like jsonrpc2's unexported anyMessage (the type
// jsonrpc2.Conn passes to ReadObject): it classifies with case-insensitive
// struct decoding, then decodes a jsonrpc2.Request or jsonrpc2.Response.
type wireMessage struct {
	request  *jsonrpc2.Request
	response *jsonrpc2.Response
}

func (m *wireMessage) UnmarshalJSON(data []byte) error {
	var probe struct {
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return err
	}
	isRequest := probe.Method != nil
	isResponse := probe.Result != nil || probe.Error != nil
	switch {
	case isRequest && !isResponse:
		return json.Unmarshal(data, &m.request)
	case isResponse && !isRequest:
		if err := json.Unmarshal(data, &m.response); err != nil {
			return err
		}
		if m.response.Error == nil && m.response.Result == nil {
			return errors.New("response with neither result nor error")
		}
		return nil
	}
	return errors.New("unable to determine message type")
}

// FuzzStream feeds arbitrary bytes to a Stream and reads until it fails. It
// must not panic or loop, every frame it writes must be a well-formed
// JSON-RPC error reply, and what it allocates must be bounded by the input
// rather than by the lengths the input announces.
func FuzzStream(f *testing.F) {
	f.Add([]byte(frameOf(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`)))
	f.Add([]byte("Content-Length: 104857600\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":7,"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		s := NewStream(bytes.NewReader(data), &out, StreamOptions{})

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		handed, err := 0, error(nil)
		for ; ; handed++ {
			if handed > len(data) {
				t.Fatalf("%d messages from %d bytes: ReadObject does not consume input", handed, len(data))
			}
			var m wireMessage
			if err = s.ReadObject(&m); err != nil {
				break
			}
			if (m.request == nil) == (m.response == nil) {
				t.Fatalf("message %d handed over is neither one request nor one response", handed)
			}
			if m.request != nil && m.request.ID.IsString && len(m.request.ID.Str) > len(ReservedIDPrefix) &&
				m.request.ID.Str[:len(ReservedIDPrefix)] == ReservedIDPrefix && !validIDText([]byte(m.request.ID.Str[len(ReservedIDPrefix):])) {
				t.Fatalf("request id %q does not restore", m.request.ID.Str)
			}
		}
		runtime.ReadMemStats(&after)
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			t.Fatalf("ReadObject ended with %v, want EOF or unexpected EOF", err)
		}

		// The stream's own replies.
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

		// Each header block may allocate an initial body buffer, a frame
		// for a reply or a rewritten body; beyond that, memory follows the
		// bytes actually received.
		blocks := bytes.Count(bytes.ToLower(data), []byte("content-length")) + 1
		limit := uint64(256<<10 + blocks*(96<<10) + 64*len(data))
		if got := after.TotalAlloc - before.TotalAlloc; got > limit {
			t.Fatalf("allocated %d bytes for %d input bytes (%d header blocks), limit %d", got, len(data), blocks, limit)
		}
	})
}

// checkErrorReply checks that body is an error reply the stream may write.
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
	case m.Error.Code != CodeParseError && m.Error.Code != CodeInvalidRequest:
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
