package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Checker checks the messages of one host connection against the protocol
// schema and keeps every mismatch it finds. It pairs each response with its
// request by id, so that results are checked against their method.
//
// The params of a request the host sent are checked when its answer
// arrives: a request the sidecar refused as bad input (invalid_params,
// invalid_request, method_not_found, not_initialized, parse_error) is a
// test of that refusal and is not held against the schema. Everything the
// sidecar sends is checked as it arrives.
type Checker struct {
	model *Model

	mu      sync.Mutex
	pending map[Direction]map[string]pendingRequest // by the request's direction, then id text
	errs    []error
	// malformed are the sidecar's requests whose results from the host
	// are a test of the sidecar's refusal of a malformed answer.
	malformed map[string]bool
}

// HostAnswersMalformed says that the host's results to the sidecar's
// requests of method are malformed on purpose (a test of what the sidecar
// does with them): they are not held against the schema.
func (c *Checker) HostAnswersMalformed(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.malformed == nil {
		c.malformed = map[string]bool{}
	}
	c.malformed[method] = true
}

type pendingRequest struct {
	method string
	params json.RawMessage
}

// NewChecker returns a Checker of the embedded protocol schema.
func NewChecker() (*Checker, error) {
	m, err := Load()
	if err != nil {
		return nil, err
	}
	return NewCheckerOf(m), nil
}

// NewCheckerOf returns a Checker of model m.
func NewCheckerOf(m *Model) *Checker {
	return &Checker{model: m, pending: map[Direction]map[string]pendingRequest{HostToSidecar: {}, SidecarToHost: {}}}
}

// inputRejected are the kinds of error that say the request itself was
// malformed: its params need not match the schema.
var inputRejected = map[string]bool{
	"invalid_params":   true,
	"invalid_request":  true,
	"method_not_found": true,
	"not_initialized":  true,
	"parse_error":      true,
}

// Check checks one message body sent in direction dir and records any
// mismatch; it also returns it.
func (c *Checker) Check(dir Direction, body []byte) error {
	err := c.check(dir, body)
	if err != nil {
		c.mu.Lock()
		c.errs = append(c.errs, fmt.Errorf("%s: %w\n    message: %s", dir, err, excerpt(body)))
		c.mu.Unlock()
	}
	return err
}

func (c *Checker) check(dir Direction, body []byte) error {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	for k := range msg {
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
		default:
			return fmt.Errorf("unknown member %q", k)
		}
	}
	if string(msg["jsonrpc"]) != `"2.0"` {
		return fmt.Errorf(`jsonrpc is %s, want "2.0"`, msg["jsonrpc"])
	}
	id := string(bytes.TrimSpace(msg["id"]))
	isNull := id == "" || id == "null"
	if rawMethod, ok := msg["method"]; ok {
		var name string
		if err := json.Unmarshal(rawMethod, &name); err != nil {
			return fmt.Errorf("method is not a string: %w", err)
		}
		params := msg["params"]
		if isNull {
			if err := c.model.ValidateParams(dir, name, params); err != nil {
				return fmt.Errorf("notification %s params: %w", name, err)
			}
			return nil
		}
		c.mu.Lock()
		c.pending[dir][id] = pendingRequest{method: name, params: params}
		c.mu.Unlock()
		if dir == SidecarToHost {
			// The sidecar's own requests are checked at once.
			if err := c.model.ValidateParams(dir, name, params); err != nil {
				return fmt.Errorf("request %s params: %w", name, err)
			}
		}
		return nil
	}

	// A response: it answers a request sent the other way.
	reqDir := HostToSidecar
	if dir == HostToSidecar {
		reqDir = SidecarToHost
	}
	c.mu.Lock()
	req, known := c.pending[reqDir][id]
	delete(c.pending[reqDir], id)
	c.mu.Unlock()
	result, hasResult := msg["result"]
	rawErr, hasErr := msg["error"]
	if hasErr && string(rawErr) == "null" {
		hasErr = false
	}
	if hasResult == hasErr {
		return errors.New("a response needs exactly one of result and error")
	}
	if !known {
		if !isNull {
			return fmt.Errorf("response to id %s, which no request had", id)
		}
		if hasResult {
			return errors.New("a result with a null id")
		}
		_, err := c.checkError(dir, rawErr, nil)
		return err
	}
	if hasErr {
		kind, err := c.checkError(dir, rawErr, &req)
		if err != nil {
			return err
		}
		if reqDir == HostToSidecar && !inputRejected[kind] {
			if err := c.model.ValidateParams(reqDir, req.method, req.params); err != nil {
				return fmt.Errorf("request %s params (answered %s): %w\n    params: %s", req.method, kind, err, excerpt(req.params))
			}
		}
		return nil
	}
	if reqDir == HostToSidecar {
		if err := c.model.ValidateParams(reqDir, req.method, req.params); err != nil {
			return fmt.Errorf("request %s params: %w\n    params: %s", req.method, err, excerpt(req.params))
		}
	}
	c.mu.Lock()
	malformed := reqDir == SidecarToHost && c.malformed[req.method]
	c.mu.Unlock()
	if malformed {
		return nil
	}
	if err := c.model.ValidateResult(reqDir, req.method, result); err != nil {
		return fmt.Errorf("%s result: %w", req.method, err)
	}
	return nil
}

// checkError checks an error object sent in direction dir, answering req
// (nil when the id is null), and returns its data.kind. Errors the host
// sends (answers to mcp/elicit and the like) go to an MCP server, whose
// protocol they follow: only their shape is checked.
func (c *Checker) checkError(dir Direction, raw json.RawMessage, req *pendingRequest) (string, error) {
	var e struct {
		Code    *json.Number    `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil {
		return "", fmt.Errorf("error object: %w", err)
	}
	if e.Code == nil || e.Message == nil {
		return "", errors.New("error object needs code and message")
	}
	if _, err := strconv.ParseInt(e.Code.String(), 10, 64); err != nil {
		return "", fmt.Errorf("error code %s is not an integer", e.Code)
	}
	if dir == HostToSidecar {
		return "", nil
	}
	if err := validate(c.model.errorData, e.Data); err != nil {
		return "", fmt.Errorf("error data: %w", err)
	}
	var data struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(e.Data, &data) // validated above
	if !c.model.kinds[data.Kind] {
		return "", fmt.Errorf("error kind %q is not in the protocol schema", data.Kind)
	}
	if code, ok := c.model.codeOf(data.Kind); ok && e.Code.String() != strconv.FormatInt(code, 10) {
		return "", fmt.Errorf("error kind %q has code %s, want %d", data.Kind, e.Code, code)
	}
	if req != nil {
		if mt, err := c.model.lookup(HostToSidecar, req.method, false); err == nil && !mt.errors[data.Kind] && !c.model.common(data.Kind) && !inputRejected[data.Kind] {
			return "", fmt.Errorf("error kind %q is not listed for %s (add it to the method's errors)", data.Kind, req.method)
		}
	}
	return data.Kind, nil
}

// Err returns every mismatch found so far, or nil. Requests the host sent
// that were never answered have their params checked now.
func (c *Checker) Err() error {
	c.mu.Lock()
	pending := c.pending[HostToSidecar]
	c.pending[HostToSidecar] = map[string]pendingRequest{}
	c.mu.Unlock()
	for _, req := range pending {
		if err := c.model.ValidateParams(HostToSidecar, req.method, req.params); err != nil {
			c.mu.Lock()
			c.errs = append(c.errs, fmt.Errorf("%s: unanswered request %s params: %w\n    params: %s", HostToSidecar, req.method, err, excerpt(req.params)))
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

func (m *Model) common(kind string) bool {
	for _, k := range m.Meta.CommonErrors {
		if k == kind {
			return true
		}
	}
	return false
}

func (m *Model) codeOf(kind string) (int64, bool) {
	for _, e := range m.Meta.Errors {
		if e.Kind == kind && e.Code != nil {
			return *e.Code, true
		}
	}
	return 0, false
}

func excerpt(b []byte) string {
	const max = 600
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// Reader returns a reader of r that checks every frame read through it as
// a message sent in direction dir.
func (c *Checker) Reader(dir Direction, r io.Reader) io.Reader {
	return io.TeeReader(r, &frameSink{c: c, dir: dir})
}

// Writer returns a writer to w that checks every frame written through it
// as a message sent in direction dir. Close closes w.
func (c *Checker) Writer(dir Direction, w io.WriteCloser) io.WriteCloser {
	return &checkedWriter{w: w, sink: &frameSink{c: c, dir: dir}}
}

// HostStreams wraps a host's two streams, r (the sidecar's output) and w
// (its input), so that every message on them is checked: it makes a
// Checker a hostclient.Checker. A nil Checker returns them as they are, so
// that a test may pass a *Checker it sets only in some runs.
func (c *Checker) HostStreams(r io.Reader, w io.WriteCloser) (io.Reader, io.WriteCloser) {
	if c == nil {
		return r, w
	}
	return c.Reader(SidecarToHost, r), c.Writer(HostToSidecar, w)
}

type checkedWriter struct {
	w    io.WriteCloser
	sink *frameSink
}

// Write checks p before writing it: once written, the answer may be read
// before Write returns, and it must find its request recorded.
func (cw *checkedWriter) Write(p []byte) (int, error) {
	cw.sink.Write(p)
	return cw.w.Write(p)
}

func (cw *checkedWriter) Close() error { return cw.w.Close() }

// frameSink splits the bytes of one direction into Content-Length frames
// and checks each body. The test hosts and the sidecar write well-formed
// frames; anything else is recorded as a mismatch and ends the checking of
// that direction.
type frameSink struct {
	c   *Checker
	dir Direction

	mu     sync.Mutex
	buf    []byte
	broken bool
}

func (s *frameSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		return len(p), nil
	}
	s.buf = append(s.buf, p...)
	for {
		end := bytes.Index(s.buf, []byte("\r\n\r\n"))
		if end < 0 {
			return len(p), nil
		}
		length := -1
		for _, line := range bytes.Split(s.buf[:end], []byte("\r\n")) {
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				s.fail(fmt.Errorf("malformed header line %q", line))
				return len(p), nil
			}
			if bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
				n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
				if err != nil || n < 0 {
					s.fail(fmt.Errorf("bad Content-Length %q", value))
					return len(p), nil
				}
				length = n
			}
		}
		if length < 0 {
			s.fail(errors.New("frame without Content-Length"))
			return len(p), nil
		}
		start := end + 4
		if len(s.buf)-start < length {
			return len(p), nil
		}
		body := s.buf[start : start+length]
		s.c.Check(s.dir, body)
		s.buf = append(s.buf[:0], s.buf[start+length:]...)
	}
}

func (s *frameSink) fail(err error) {
	s.broken = true
	s.buf = nil
	s.c.mu.Lock()
	s.c.errs = append(s.c.errs, fmt.Errorf("%s: %w (frames after it are not checked)", s.dir, err))
	s.c.mu.Unlock()
}
