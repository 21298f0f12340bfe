package sidecar_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// listing is n numbered lines, about 12 tokens each.
func listing(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d of the listing, with some words in it\n", i+1)
	}
	return b.String()
}

// textResult is a CallToolResult of one text block.
func textResult(text string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
}

// cutResult is a tools/call result as the tests read it.
type cutResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		Data string `json:"data"`
	} `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// account is the sidecar's _meta account of a cut, or nil.
func (r cutResult) account(t *testing.T) *protocol.OutputCut {
	t.Helper()
	raw, ok := r.Meta[protocol.MetaOutputCut]
	if !ok {
		return nil
	}
	var c protocol.OutputCut
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("_meta %s: %v", protocol.MetaOutputCut, err)
	}
	return &c
}

func decodeResult(t *testing.T, raw json.RawMessage) cutResult {
	t.Helper()
	var r cutResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

// resultServer is a Streamable HTTP server whose tool "dump" returns its
// argument "result" (fixture.BehaviorResult's behaviour, over HTTP).
func resultServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "results"}, nil)
	s.AddTool(&mcp.Tool{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(args.Result, &res); err != nil {
			return nil, err
		}
		return &res, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		ts.Close()
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	return ts.URL
}

// outputTmp points the sidecar's temp folder (TMPDIR, which it reads from
// its environment) at a folder of the test and returns it.
func outputTmp(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

// TestToolOutputCutToDefaultLimit: a result over the default limit (25,000
// tokens) reaches the host cut at a line break, with a marker last and the
// sidecar's account in _meta; the whole text is in a private file of the
// session, which goes when the session closes. Over stdio the call is
// answered from the server's read loop, over HTTP from a goroutine of its
// own: both cut alike.
func TestToolOutputCutToDefaultLimit(t *testing.T) {
	tmp := outputTmp(t)
	text := listing(3000) // about 36,000 tokens
	for _, tc := range []struct {
		name    string
		cfg     func(t *testing.T) *config.ServerConfig
		ownGoro bool
	}{
		{"stdio", func(t *testing.T) *config.ServerConfig {
			return fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("dump", fixture.BehaviorResult)}})
		}, false},
		{"http", func(t *testing.T) *config.ServerConfig { return &config.ServerConfig{URL: resultServer(t)} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server first: its cleanup (which waits for its
			// clients) runs after the harness's.
			cfg := tc.cfg(t)
			var mu sync.Mutex
			var own []bool
			h := newHookedHarness(t, sidecar.Hooks{ToolCallSent: func(_, _ string, o bool) {
				mu.Lock()
				own = append(own, o)
				mu.Unlock()
			}})
			h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			h.waitComplete(sid, 0)
			raw, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__dump", "arguments": map[string]any{"result": textResult(text)}})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if !slices.Equal(own, []bool{tc.ownGoro}) {
				t.Errorf("calls sent on a goroutine of their own: %v, want [%v]", own, tc.ownGoro)
			}
			mu.Unlock()
			res := decodeResult(t, raw)
			cut := res.account(t)
			if cut == nil {
				t.Fatalf("no %s in _meta: %.300s", protocol.MetaOutputCut, raw)
			}
			if len(res.Content) != 2 {
				t.Fatalf("content has %d blocks, want the text cut and the marker", len(res.Content))
			}
			kept := res.Content[0].Text
			if !strings.HasPrefix(text, kept) || !strings.HasSuffix(kept, "\n") || len(kept) == len(text) {
				t.Errorf("kept text (%d of %d bytes) is not the text cut at a line break", len(kept), len(text))
			}
			total, keptTokens := catalog.EstimateTokens([]byte(text)), catalog.EstimateTokens([]byte(kept))
			if cut.Limit != 25000 || cut.OriginalTokens != total || cut.KeptTokens != keptTokens || keptTokens > 25000 || keptTokens < 24900 {
				t.Errorf("account %+v: want limit 25000, original %d, kept %d (at most the limit, less than a line under it)", cut, total, keptTokens)
			}
			if cut.CutBlock == nil || *cut.CutBlock != 0 || len(cut.OmittedBlocks) != 0 || cut.FileFormat != protocol.OutputFileText {
				t.Errorf("account %+v: want block 0 cut, nothing omitted, a text file", cut)
			}
			rest := strings.Count(kept, "\n") + 1
			marker := res.Content[1].Text
			for _, want := range []string{`tool "mcp__s__dump"`, cut.File, "25,000", thousands(total), fmt.Sprintf("from line %s of the file", thousands(rest))} {
				if !strings.Contains(marker, want) {
					t.Errorf("marker %q does not say %q", marker, want)
				}
			}
			if filepath.Dir(filepath.Dir(cut.File)) != tmp {
				t.Errorf("file %s is not in a folder of TMPDIR %s", cut.File, tmp)
			}
			data, err := os.ReadFile(cut.File)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != text {
				t.Errorf("the file holds %d bytes, not the whole text (%d)", len(data), len(text))
			}
			if runtime.GOOS != "windows" {
				for path, want := range map[string]fs.FileMode{cut.File: 0o600, filepath.Dir(cut.File): 0o700} {
					if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
						t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
					}
				}
			}
			if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": sid}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Dir(cut.File)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the session's results folder is still there after session/close: %v", err)
			}
		})
	}
}

// thousands is the marker's way of writing n.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestToolOutputUnderLimitUntouched: a result within its limit reaches
// the host as it does with limits off, byte for byte, and no file is
// written: one of a few bytes, one close to the limit in plain text, one
// in text that is mostly outside ASCII, one \u-escaped.
func TestToolOutputUnderLimitUntouched(t *testing.T) {
	tmp := outputTmp(t)
	results := map[string]string{
		"small":             `{"content":[{"type":"text","text":"ok"}]}`,
		"near the limit":    string(mustJSON(t, textResult(listing(780)))), // about 9,500 tokens
		"outside ASCII":     string(mustJSON(t, textResult(strings.Repeat("日本語のテキスト。\n", 500)))),
		"escaped":           `{"content":[{"type":"text","text":"` + strings.Repeat(`caf\u00e9 `, 2000) + `"}]}`,
		"structured":        `{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1},"_meta":{"x":1}}`,
		"not a tool result": `{"whatever":` + string(mustJSON(t, listing(2000))) + `}`,
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range results {
			if !yield(k) {
				return
			}
		}
	})
	relay := func(features map[string]bool) map[string]json.RawMessage {
		spec := fixture.Spec{Raw: &fixture.RawSpec{}}
		out := map[string]json.RawMessage{}
		for _, name := range names {
			spec.Raw.Results = map[string]json.RawMessage{"tools/call": json.RawMessage(results[name])}
			h := newHarness(t)
			h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
				"features": features, "limits": map[string]any{"maxToolOutputTokens": 10000},
			})
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			h.waitComplete(sid, 0)
			raw, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__echo"})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[name] = raw
		}
		return out
	}
	on, off := relay(nil), relay(map[string]bool{"mcp_tool_output_limit": false})
	for _, name := range names {
		if string(on[name]) != string(off[name]) {
			t.Errorf("%s: with limits %.200s, without %.200s", name, on[name], off[name])
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("files written for results within their limit: %v", entries)
	}
}

// TestToolOutputLimits: the limit of a call is the tool's
// output_token_limit, else its server's, else the host's
// limits.maxToolOutputTokens, else 25,000; the host's is also a ceiling
// on the others; with the feature off nothing is cut.
func TestToolOutputLimits(t *testing.T) {
	outputTmp(t)
	text := listing(2600) // about 31,000 tokens
	servers := func() map[string]*config.ServerConfig {
		s := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("own", fixture.BehaviorResult), tool("other", fixture.BehaviorResult)}})
		s.OutputTokenLimit = 3000
		s.Tools = map[string]config.ToolConfig{"own": {OutputTokenLimit: 2000}}
		return map[string]*config.ServerConfig{
			"s":     s,
			"plain": fixture.Config("plain", fixture.Spec{Tools: []fixture.ToolSpec{tool("other", fixture.BehaviorResult)}}),
		}
	}
	tests := []struct {
		name  string
		extra map[string]any
		want  map[string]int // by tool: the limit that applied, 0 for none
	}{
		{"configured", nil, map[string]int{"mcp__s__own": 2000, "mcp__s__other": 3000, "mcp__plain__other": 25000}},
		{"host limit", map[string]any{"limits": map[string]any{"maxToolOutputTokens": 2500}},
			map[string]int{"mcp__s__own": 2000, "mcp__s__other": 2500, "mcp__plain__other": 2500}},
		{"host limit over the configured ones", map[string]any{"limits": map[string]any{"maxToolOutputTokens": 30000}},
			map[string]int{"mcp__s__own": 2000, "mcp__s__other": 3000, "mcp__plain__other": 30000}},
		{"feature off", map[string]any{"features": map[string]bool{"mcp_tool_output_limit": false}},
			map[string]int{"mcp__s__own": 0, "mcp__s__other": 0, "mcp__plain__other": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			init := h.initialize(servers(), tt.extra)
			if on := slices.Contains(init.Capabilities.Features, "mcp_tool_output_limit"); on != (tt.want["mcp__s__own"] != 0) {
				t.Errorf("capabilities.features %q", init.Capabilities.Features)
			}
			sid := h.open(map[string]any{"startup": "eager"}).SessionID
			h.waitComplete(sid, 0)
			got := map[string]int{}
			for name := range tt.want {
				raw, err := h.callTool(map[string]any{"sessionId": sid, "name": name, "arguments": map[string]any{"result": textResult(text)}})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				res := decodeResult(t, raw)
				if cut := res.account(t); cut != nil {
					got[name] = cut.Limit
					if cut.KeptTokens > cut.Limit {
						t.Errorf("%s: kept %d tokens over the limit %d", name, cut.KeptTokens, cut.Limit)
					}
				} else {
					got[name] = 0
					if len(res.Content) != 1 || res.Content[0].Text != text {
						t.Errorf("%s: not cut, yet not whole", name)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("limits that applied (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolOutputBinaryKeptOrLeftOutWhole: binary content counts by its
// size and is never cut: an image that fits is kept byte for byte, audio
// that does not is left out whole and named in the marker and _meta; a
// structuredContent over what is left is left out whole (it cannot be
// cut and stay valid); the whole result is then in a JSON file.
func TestToolOutputBinaryKeptOrLeftOutWhole(t *testing.T) {
	outputTmp(t)
	bin := make([]byte, 150000)
	for i := range bin {
		bin[i] = byte(i * 7 % 251)
	}
	image := base64.StdEncoding.EncodeToString(bin[:3000])
	audio := base64.StdEncoding.EncodeToString(bin) // about 27,000 tokens as text
	full := map[string]any{
		"content": []any{
			map[string]any{"type": "text", "text": listing(400)},
			map[string]any{"type": "image", "data": image, "mimeType": "image/png"},
			map[string]any{"type": "audio", "data": audio, "mimeType": "audio/wav"},
		},
		"structuredContent": map[string]any{"listing": listing(300)},
		"isError":           true,
	}
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("dump", fixture.BehaviorResult)}})},
		map[string]any{"limits": map[string]any{"maxToolOutputTokens": 6000}})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	raw, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__dump", "arguments": map[string]any{"result": full}})
	if err != nil {
		t.Fatal(err)
	}
	res := decodeResult(t, raw)
	cut := res.account(t)
	if cut == nil {
		t.Fatalf("not cut: %.300s", raw)
	}
	var kinds []string
	for _, b := range res.Content {
		kinds = append(kinds, b.Type)
	}
	if !slices.Equal(kinds, []string{"text", "image", "text"}) || res.Content[1].Data != image || res.Content[0].Text != listing(400) {
		t.Errorf("content %v: want the text and the image whole, and the marker", kinds)
	}
	if !slices.Equal(cut.OmittedBlocks, []int{2}) || cut.CutBlock != nil || !cut.StructuredContentOmitted || res.StructuredContent != nil || !res.IsError {
		t.Errorf("account %+v, structuredContent %s, isError %v: want the audio and structuredContent left out, isError kept", cut, res.StructuredContent, res.IsError)
	}
	for _, want := range []string{"audio block 3", "structuredContent", cut.File} {
		if !strings.Contains(res.Content[2].Text, want) {
			t.Errorf("marker %q does not name %q", res.Content[2].Text, want)
		}
	}
	if cut.FileFormat != protocol.OutputFileJSON || !strings.HasSuffix(cut.File, ".json") {
		t.Fatalf("file %s (%s), want JSON", cut.File, cut.FileFormat)
	}
	data, err := os.ReadFile(cut.File)
	if err != nil {
		t.Fatal(err)
	}
	var whole struct {
		Content []struct {
			Data string `json:"data"`
		} `json:"content"`
		StructuredContent map[string]string `json:"structuredContent"`
	}
	if err := json.Unmarshal(data, &whole); err != nil {
		t.Fatalf("file: %v", err)
	}
	if len(whole.Content) != 3 || whole.Content[2].Data != audio || whole.StructuredContent["listing"] != listing(300) {
		t.Errorf("the file does not hold the whole result")
	}
}

// TestTaskResultLimited: the result of a task (tasks/result) is a tool's
// result too, and is cut to its server's limit.
func TestTaskResultLimited(t *testing.T) {
	outputTmp(t)
	big := mustJSON(t, textResult(listing(600)))
	cfg := fixture.Config("s", fixture.Spec{Raw: &fixture.RawSpec{Results: map[string]json.RawMessage{"tasks/result": big}}})
	cfg.OutputTokenLimit = 1000
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	var raw json.RawMessage
	if err := h.call(protocol.MethodTasksResult, map[string]any{"sessionId": sid, "server": "s", "taskId": "t1"}, &raw); err != nil {
		t.Fatal(err)
	}
	if cut := decodeResult(t, raw).account(t); cut == nil || cut.Limit != 1000 {
		t.Errorf("tasks/result: account %+v, want a cut at the server's limit, 1000", cut)
	}
}

// cutCall calls a tool whose result is over a limit of 1,000 tokens and
// returns the result.
func cutCall(t *testing.T, h *harness) cutResult {
	t.Helper()
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("dump", fixture.BehaviorResult)}})
	cfg.OutputTokenLimit = 1000
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, nil)
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.waitComplete(sid, 0)
	raw, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__dump", "arguments": map[string]any{"result": textResult(listing(300))}})
	if err != nil {
		t.Fatal(err)
	}
	return decodeResult(t, raw)
}

// TestToolOutputFilesGoAtShutdown: shutdown, which ends every session,
// removes their files too.
func TestToolOutputFilesGoAtShutdown(t *testing.T) {
	outputTmp(t)
	h := newHarness(t)
	cut := cutCall(t, h).account(t)
	if cut == nil || cut.File == "" {
		t.Fatalf("account %+v: want a file", cut)
	}
	if err := h.call(protocol.MethodShutdown, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(cut.File)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("results folder still there after shutdown: %v", err)
	}
}

// TestToolOutputWithoutFile: when the file cannot be written (here, no
// temp folder), the result is still cut, and the marker and _meta say the
// whole was not kept.
func TestToolOutputWithoutFile(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	h := newHarness(t)
	res := cutCall(t, h)
	cut := res.account(t)
	if cut == nil || cut.File != "" || cut.FileFormat != "" || cut.FileError == "" {
		t.Fatalf("account %+v: want fileError and no file", cut)
	}
	if marker := res.Content[len(res.Content)-1].Text; !strings.Contains(marker, "could not be kept") {
		t.Errorf("marker %q does not say the whole result was not kept", marker)
	}
}
