package sidecar_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// wireTap keeps every byte the sidecar wrote to the host.
type wireTap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wireTap) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// frames splits what was tapped into frame bodies.
func (w *wireTap) frames(t *testing.T) [][]byte {
	t.Helper()
	w.mu.Lock()
	data := bytes.Clone(w.buf.Bytes())
	w.mu.Unlock()
	var bodies [][]byte
	br := bufio.NewReader(bytes.NewReader(data))
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return bodies
		}
		num, ok := strings.CutPrefix(line, "Content-Length: ")
		if err != nil || !ok {
			t.Fatalf("frame %d: bad header %q (%v)", len(bodies), line, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil {
			t.Fatalf("frame %d: %v", len(bodies), err)
		}
		if blank, _ := br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("frame %d: no blank line after the header", len(bodies))
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatalf("frame %d: %v", len(bodies), err)
		}
		bodies = append(bodies, body)
	}
}

// tappedSidecar runs a sidecar in process with logger and returns a host
// connected to it, with every byte the sidecar writes copied to tap
// (when not nil) and, unless checker is nil, every message checked
// against the protocol schema. The sidecar stops when the test ends.
func tappedSidecar(t *testing.T, tap io.Writer, logger *slog.Logger, checker *schema.Checker) (context.Context, *hostclient.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	hostR, sidecarW := io.Pipe()
	sidecarR, hostW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		env := func(k string) (string, bool) {
			if k == "XDG_CACHE_HOME" {
				return "", false
			}
			return os.LookupEnv(k)
		}
		code := sidecar.Serve(ctx, sidecarR, sidecarW, sidecar.Options{Env: env, Logger: logger})
		sidecarW.Close()
		sidecarR.Close()
		exit <- code
	}()
	var r io.Reader = hostR
	if tap != nil {
		r = io.TeeReader(hostR, tap)
	}
	client := hostclient.New(ctx, r, hostW, hostclient.Options{Checker: checker})
	t.Cleanup(func() {
		client.Close()
		select {
		case <-exit:
		case <-time.After(testTimeout):
			t.Error("sidecar did not stop after the host closed its end")
		}
		cancel()
	})
	return ctx, client
}

// TestServerTextNotUTF8ReachesTheHostRepaired: a server that sends bytes
// that are not UTF-8 in a tool's description and in a tool result (one
// small, one large enough to be written without a copy) does not make the
// host wire invalid: every frame to the host is valid UTF-8 and valid
// JSON, each invalid byte became U+FFFD (as encoding/json decodes it),
// and what surrounds them (escapes, multi-byte text) is intact. A Rust
// host drops the whole connection on a frame that is not UTF-8.
func TestServerTextNotUTF8ReachesTheHostRepaired(t *testing.T) {
	const mark = "@not-utf8@"
	repaired := strings.Repeat("\uFFFD", len(fixture.InvalidUTF8Bytes))
	tools := `[{"name":"echo","description":"desc ` + mark + ` end","inputSchema":{"type":"object"}}]`
	text := `before ` + mark + ` \"quoted\" \\ \u00e9 é ✓ ` + mark // JSON string content, mark last (before the quote)
	want := strings.NewReplacer(mark, repaired, `\"`, `"`, `\\`, `\`, `\u00e9`, "é").Replace(text)
	large := strings.Repeat("x", 100<<10)
	servers := map[string]*config.ServerConfig{
		"small": fixture.Config("small", fixture.Spec{Raw: &fixture.RawSpec{InvalidUTF8: mark, Tools: json.RawMessage(tools),
			Results: map[string]json.RawMessage{"tools/call": json.RawMessage(`{"content":[{"type":"text","text":"` + text + `"}]}`)}}}),
		"large": fixture.Config("large", fixture.Spec{Raw: &fixture.RawSpec{InvalidUTF8: mark, Tools: json.RawMessage(tools),
			Results: map[string]json.RawMessage{"tools/call": json.RawMessage(`{"content":[{"type":"text","text":"` + large + text + `"}]}`)}}}),
	}

	var tap wireTap
	ctx, client := tappedSidecar(t, &tap, slog.New(slog.DiscardHandler), schemaChecker(t))
	call := func(method string, params, result any) {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, testTimeout)
		defer ccancel()
		if err := client.Call(cctx, method, params, result); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	call(protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "test"}, "cacheDir": t.TempDir(), "servers": servers}, nil)
	var open protocol.SessionOpenResult
	call(protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open)

	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	call(protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list)
	if len(list.Tools) != 2 {
		t.Fatalf("tools/list: %d tools, want 2", len(list.Tools))
	}
	for _, tl := range list.Tools {
		if want := "desc " + repaired + " end"; tl.Description != want {
			t.Errorf("%s: description %q, want %q", tl.Name, tl.Description, want)
		}
	}
	for _, server := range []string{"small", "large"} {
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		call(protocol.MethodToolsCall, map[string]any{"sessionId": open.SessionID, "name": "mcp__" + server + "__echo"}, &res)
		if len(res.Content) != 1 {
			t.Fatalf("%s: %d content blocks, want 1", server, len(res.Content))
		}
		got := strings.TrimPrefix(res.Content[0].Text, large)
		if got != want {
			t.Errorf("%s: result text %q, want %q", server, got, want)
		}
	}

	for i, body := range tap.frames(t) {
		if !utf8.Valid(body) {
			at := bytes.IndexFunc(body, func(r rune) bool { return r == utf8.RuneError })
			t.Errorf("frame %d is not UTF-8 (at byte %d): %.200q", i, at, body[max(at-40, 0):])
		}
		if !json.Valid(body) {
			t.Errorf("frame %d is not JSON: %.200q", i, body)
		}
	}
}
