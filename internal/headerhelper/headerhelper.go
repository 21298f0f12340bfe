// Package headerhelper runs a header helper: the command of Claude Code's
// headersHelper and Codex's http_headers_helper, whose standard output is
// a JSON object of HTTP headers for a Streamable HTTP server
// ({"Authorization": "Bearer ..."}). People use it for tokens that expire
// (a cloud CLI's access token, a keychain item, an SSO login).
//
// The command is a shell command line, run as both tools run it: through
// the shell (sh -c; cmd /C on Windows), in the folder of the file that
// defines it, with the environment it is given, no standard input, and a
// time limit, after which its process group is killed. Its output is
// checked: a JSON object of at most MaxHeaders headers whose names are
// HTTP tokens and whose values are strings HTTP allows (no CR, LF, NUL or
// other control character). What it prints is a secret: an error never
// quotes its output nor its standard error (a script tracing itself
// prints the token), only says what is wrong and how many bytes there
// were.
package headerhelper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// Limits of a helper's output, as Codex bounds it.
const (
	MaxStdout      = 64 << 10
	MaxHeaders     = 64
	MaxValueBytes  = 16 << 10
	maxStderrBytes = 8 << 10
)

// Spec is one helper to run.
type Spec struct {
	// Command is the shell command line.
	Command string
	// Dir is the folder it runs in ("" the caller's).
	Dir string
	// Env is its whole environment ("NAME=value"); nil is an empty one.
	Env []string
	// Timeout bounds the run, output included (0: no bound but ctx's).
	Timeout time.Duration
}

// Error is a helper that failed: it did not start, ran out of time,
// exited with an error, or printed something that is not headers.
type Error struct {
	Command string
	Reason  string
	// Err is the caller's context's error when it ended the run.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("header helper %q %s", e.Command, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

var errTimeout = errors.New("header helper timed out")

// Run runs the helper and returns its headers (canonical names, one value
// each, the last of a name given twice in other case). ctx ending kills
// it too.
func Run(ctx context.Context, s Spec) (http.Header, error) {
	fail := func(format string, args ...any) (http.Header, error) {
		return nil, &Error{Command: s.Command, Reason: fmt.Sprintf(format, args...)}
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.Timeout, errTimeout)
		defer cancel()
	}
	cmd := shellCommand(ctx, s.Command)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stdin = nil
	stdout := &capped{max: MaxStdout}
	stderr := &capped{max: maxStderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A grandchild that keeps the pipes open must not hold Wait up once
	// the group is killed.
	cmd.WaitDelay = time.Second
	inGroup(cmd)
	err := cmd.Run()
	// Whatever it left behind in its group goes with it.
	killGroup(cmd)
	switch {
	case errors.Is(context.Cause(ctx), errTimeout):
		return fail("did not finish within %s (http_headers_helper_timeout_sec)", s.Timeout)
	case ctx.Err() != nil:
		// Said with its cause (a startup's deadline, a session that
		// closed), not as a bare "context canceled".
		return nil, &Error{Command: s.Command, Reason: fmt.Sprintf("was stopped before it finished: %v", context.Cause(ctx)), Err: ctx.Err()}
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fail("exited with %s%s", exit.ProcessState, omitted(stderr))
		}
		return fail("could not be run: %v", err)
	case stdout.over:
		return fail("printed more than %d bytes", MaxStdout)
	}
	return parse(s.Command, stdout.buf.Bytes())
}

// omitted says how much standard error there was, without it.
func omitted(stderr *capped) string {
	if stderr.n == 0 {
		return ""
	}
	return fmt.Sprintf(" (its %d bytes of standard error are not shown: they may hold a secret; run it yourself to see them)", stderr.n)
}

// parse checks and decodes a helper's output.
func parse(command string, out []byte) (http.Header, error) {
	fail := func(format string, args ...any) (http.Header, error) {
		return nil, &Error{Command: command, Reason: fmt.Sprintf(format, args...)}
	}
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return fail("printed nothing; it must print a JSON object of headers, {\"NAME\": \"value\"}")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(out, &raw); err != nil || raw == nil {
		// The output is not quoted: it may be the token itself.
		return fail("did not print a JSON object of headers ({\"NAME\": \"value\"}; %d bytes not shown)", len(out))
	}
	if len(raw) > MaxHeaders {
		return fail("printed %d headers, more than %d", len(raw), MaxHeaders)
	}
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	slices.Sort(names)
	h := http.Header{}
	for _, name := range names {
		var v string
		if err := json.Unmarshal(raw[name], &v); err != nil {
			return fail("gave header %q a value that is not a string", name)
		}
		if !ValidName(name) {
			return fail("printed %q, which is not a valid HTTP header name", name)
		}
		if len(v) > MaxValueBytes {
			return fail("gave header %q a value of more than %d bytes", name, MaxValueBytes)
		}
		if why := InvalidValue(v); why != "" {
			return fail("gave header %q a value HTTP does not allow (%s)", name, why)
		}
		h.Set(name, v)
	}
	return h, nil
}

// ValidName reports whether s is an HTTP field name (an RFC 9110 token).
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// InvalidValue says why v cannot be an HTTP field value (RFC 9110: visible
// characters, spaces and tabs inside, obs-text), or "".
func InvalidValue(v string) string {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\r' || c == '\n':
			return "a line break"
		case c == 0:
			return "a NUL byte"
		case c == '\t':
		case c < 0x20 || c == 0x7f:
			return "a control character"
		}
	}
	if v != "" && (v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		return "white space at its start or end"
	}
	return ""
}

// Values are the secrets of headers h for a scrubber: each value and,
// for "Scheme credentials", the credentials alone (a server may quote
// them without the scheme).
func Values(h http.Header) []string {
	var out []string
	for _, vs := range h {
		for _, v := range vs {
			out = append(out, v)
			if _, cred, ok := bytes.Cut([]byte(v), []byte(" ")); ok {
				out = append(out, string(cred))
			}
		}
	}
	return out
}

// capped keeps at most max bytes of what is written to it, and counts
// the rest.
type capped struct {
	mu   sync.Mutex
	max  int
	buf  bytes.Buffer
	n    int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += len(p)
	if room := c.max - c.buf.Len(); room < len(p) {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

var _ io.Writer = (*capped)(nil)
