package sidecar

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// asciiEscaped is s as a JSON string with every character outside ASCII
// written \uXXXX, as Python's json.dumps writes it by default: the form
// whose estimate on the wire is below that of its text.
func asciiEscaped(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// randomText is text of every kind the estimator weighs: words, numbers,
// punctuation, line breaks, quotes and backslashes, and characters
// outside ASCII of two, three and four bytes.
func randomText(r *rand.Rand, n int) string {
	pieces := []string{"word", "a", "Zebra42", " ", "  ", "\n", "\t", "{", "}", "\"", "\\", ",", ":", "é", "ß", "日本", "😀", "–", "0", "x"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// randomResult is a CallToolResult of random blocks, its strings written
// either as Go writes them or all-ASCII with \u escapes.
func randomResult(r *rand.Rand) string {
	str := func(s string) string {
		if r.IntN(2) == 0 {
			return asciiEscaped(s)
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	data := func() string {
		raw := make([]byte, r.IntN(3000))
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		return base64.StdEncoding.EncodeToString(raw)
	}
	var blocks []string
	for range r.IntN(6) {
		switch r.IntN(7) {
		case 0, 1, 2:
			blocks = append(blocks, `{"type":"text","text":`+str(randomText(r, r.IntN(4000)))+`}`)
		case 3:
			blocks = append(blocks, `{"type":"image","data":"`+data()+`","mimeType":"image/png"}`)
		case 4:
			blocks = append(blocks, `{"type":"audio","data":"`+data()+`","mimeType":"audio/wav"}`)
		case 5:
			blocks = append(blocks, `{"type":"resource","resource":{"uri":"file:///a","text":`+str(randomText(r, r.IntN(2000)))+`}}`)
		case 6:
			blocks = append(blocks, `{"type":"resource_link","uri":"file:///b","name":`+str(randomText(r, 40))+`}`)
		}
	}
	res := `{"content":[` + strings.Join(blocks, ",") + `]`
	if r.IntN(2) == 0 {
		res += `,"structuredContent":{"k":` + str(randomText(r, r.IntN(3000))) + `,"n":[1,2.5,-3e4]}`
	}
	return res + `,"isError":false}`
}

// TestOutputBoundsNeverUnderestimate: the checks that let a result through
// without decoding it (outputMayExceed on its length, outputWithin on its
// bytes) never pass one whose count, block by block, is over the limit.
func TestOutputBoundsNeverUnderestimate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		raw := []byte(randomResult(r))
		if !json.Valid(raw) {
			t.Fatalf("case %d: not JSON: %s", i, raw)
		}
		res, err := parseToolResult(raw)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		count := res.tokens()
		for _, limit := range []int{count - 1, count / 2, count - count/20} {
			if limit <= 0 {
				continue
			}
			if !outputMayExceed(raw, limit) {
				t.Errorf("case %d: %d bytes counted %d passed as within %d by length", i, len(raw), count, limit)
			}
			if outputWithin(raw, limit) {
				t.Errorf("case %d: counted %d passed as within %d by the wire estimate (%d, %d escapes): %.300s", i, count, limit, catalog.EstimateTokens(raw), strings.Count(string(raw), `\u`), raw)
			}
		}
	}
	// Invalid UTF-8 counts 2 per byte; \u escapes of characters outside
	// ASCII count more than their bytes on the wire.
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"` + strings.Repeat("\xff", 100) + `"}]}`,
		`{"content":[{"type":"text","text":` + asciiEscaped(strings.Repeat("é", 200)) + `}]}`,
		`{"content":[{"type":"text","text":` + asciiEscaped(strings.Repeat("😀a", 100)) + `}]}`,
	} {
		res, err := parseToolResult([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		count := res.tokens()
		if !outputMayExceed([]byte(raw), count-1) || outputWithin([]byte(raw), count-1) {
			t.Errorf("%.60s...: counted %d, let through at %d", raw, count, count-1)
		}
	}
}

// TestOutputMayExceedSmallResults: a result of at most half its limit in
// bytes, or of at most its limit in bytes of valid UTF-8, is not looked at
// further; one without a limit never is.
func TestOutputMayExceedSmallResults(t *testing.T) {
	tests := []struct {
		raw   string
		limit int
		want  bool
	}{
		{strings.Repeat("x", 100), 200, false},
		{strings.Repeat("x", 100), 100, false},
		{strings.Repeat("x", 101), 100, true},
		{strings.Repeat("\xff", 50), 100, false}, // half the limit: invalid bytes too
		{strings.Repeat("\xff", 60), 100, true},
		{strings.Repeat("é", 50), 100, false},
		{strings.Repeat("x", 1<<20), 0, false},
	}
	for _, tt := range tests {
		if got := outputMayExceed([]byte(tt.raw), tt.limit); got != tt.want {
			t.Errorf("%d bytes %.8q at limit %d: %v, want %v", len(tt.raw), tt.raw, tt.limit, got, tt.want)
		}
	}
}

// TestTextPrefix: the kept part of a text ends at a character boundary,
// is within the budget, and is as long as it can be, or ends at the last
// line break within it unless that keeps less than half.
func TestTextPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		text := randomText(r, r.IntN(8000))
		budget := 1 + r.IntN(catalog.EstimateTokens([]byte(text))+2)
		n := textPrefix(text, budget)
		if n < 0 || n > len(text) || (n < len(text) && !utf8.RuneStart(text[n])) {
			t.Fatalf("case %d: prefix %d of %d bytes is not at a character boundary", i, n, len(text))
		}
		fits := func(j int) bool { return catalog.EstimateTokens([]byte(text[:j])) <= budget }
		if !fits(n) {
			t.Fatalf("case %d: prefix of %d tokens over a budget of %d", i, catalog.EstimateTokens([]byte(text[:n])), budget)
		}
		// The longest prefix that fits (estimates grow with the prefix):
		// the answer is that, or its last line break.
		next := func(j int) int {
			_, size := utf8.DecodeRuneInString(text[j:])
			return j + size
		}
		longest := n
		for longest < len(text) && fits(next(longest)) {
			longest = next(longest)
		}
		nl := strings.LastIndexByte(text[:longest], '\n')
		switch {
		case nl >= 0 && nl+1 >= longest/2:
			if n != nl+1 {
				t.Fatalf("case %d: prefix %d, want the line break at %d (the longest that fits is %d)", i, n, nl+1, longest)
			}
		case n != longest:
			t.Fatalf("case %d: prefix %d, the longest that fits is %d (budget %d)", i, n, longest, budget)
		}
	}
	if n := textPrefix("abc", 0); n != 0 {
		t.Errorf("budget 0: %d", n)
	}
	if n := textPrefix("日本語", 2); n != len("日") {
		t.Errorf("two tokens of 日本語: %d bytes", n)
	}
}

func mustParse(t *testing.T, raw string) *toolResult {
	t.Helper()
	res, err := parseToolResult([]byte(raw))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return res
}

// lines is n numbered lines of text.
func lines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d of the listing, with some words in it\n", i+1)
	}
	return b.String()
}

func textBlock(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(b) + `}`
}

// TestCutPlan: whole blocks first, then structuredContent, then the first
// text block left out is cut to what is left; binary data is kept or left
// out whole.
func TestCutPlan(t *testing.T) {
	big := lines(400)                            // about 5,000 tokens
	image := strings.Repeat("iVBORw0KGgo", 4000) // base64 past the image cost
	tests := []struct {
		name      string
		raw       string
		limit     int
		keep      []bool
		cutBlock  int
		omitted   []int
		dropStruc bool
	}{
		{"one big text", `{"content":[` + textBlock(big) + `]}`, 1000, []bool{false}, 0, nil, false},
		{"a summary kept whole, the big text cut", `{"content":[` + textBlock(big) + `,` + textBlock("summary: 400 lines") + `]}`, 1000, []bool{false, true}, 0, nil, false},
		{"an image kept whole", `{"content":[` + textBlock(big) + `,{"type":"image","data":"` + image + `","mimeType":"image/png"}]}`, 3000, []bool{false, true}, 0, nil, false},
		{"an image left out whole", `{"content":[{"type":"image","data":"` + image + `","mimeType":"image/png"},` + textBlock(big) + `]}`, 1000, []bool{false, false}, 1, []int{0}, false},
		{"audio left out whole", `{"content":[{"type":"audio","data":"` + image + `","mimeType":"audio/wav"}]}`, 1000, []bool{false}, -1, []int{0}, false},
		{"small structuredContent kept", `{"content":[` + textBlock(big) + `],"structuredContent":{"lines":400}}`, 1000, []bool{false}, 0, nil, false},
		{"large structuredContent left out", `{"content":[` + textBlock("done") + `],"structuredContent":{"text":` + string(must(json.Marshal(big))) + `}}`, 1000, []bool{true}, -1, nil, true},
		{"only the first text left out is cut", `{"content":[` + textBlock(big) + `,` + textBlock(big) + `]}`, 1000, []bool{false, false}, 0, []int{1}, false},
		{"a budget too small for a line", `{"content":[` + textBlock(big) + `]}`, 5, []bool{false}, 0, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustParse(t, tt.raw)
			if res.tokens() <= tt.limit {
				t.Fatalf("%d tokens: not over %d", res.tokens(), tt.limit)
			}
			p := res.cut(tt.limit)
			got := struct {
				Keep      []bool
				CutBlock  int
				Omitted   []int
				DropStruc bool
			}{p.keep, p.cutBlock, p.omitted, p.dropStructured}
			want := struct {
				Keep      []bool
				CutBlock  int
				Omitted   []int
				DropStruc bool
			}{tt.keep, tt.cutBlock, tt.omitted, tt.dropStruc}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if p.kept > tt.limit {
				t.Errorf("kept %d tokens, over the limit %d", p.kept, tt.limit)
			}
			if p.cutBlock >= 0 {
				full := res.blocks[p.cutBlock].text
				if !strings.HasPrefix(full, p.cutText) || p.cutText == "" {
					t.Errorf("cut text %q is not a prefix of the block", p.cutText)
				}
				if strings.Contains(full, "\n") && !strings.HasSuffix(p.cutText, "\n") && tt.limit > 10 {
					t.Errorf("cut text does not end at a line break: ...%q", p.cutText[max(len(p.cutText)-40, 0):])
				}
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestRenderKeepsResultValid: a cut result is a CallToolResult: the
// server's other members as sent, the blocks kept as sent, the cut block
// with its other members, the marker last, the server's _meta kept with
// the sidecar's account (a value the server put under that key replaced).
func TestRenderKeepsResultValid(t *testing.T) {
	raw := `{"content":[{"type":"text","text":` + string(must(json.Marshal(lines(400)))) + `,"annotations":{"priority":0.5}},` +
		`{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],` +
		`"structuredContent":{"text":` + string(must(json.Marshal(lines(400)))) + `},"isError":true,` +
		`"_meta":{"trace":"abc","mcp-sidecar/truncated":{"limit":1}},"later":{"x":1}}`
	res := mustParse(t, raw)
	p := res.cut(1000)
	cut := protocol.OutputCut{Limit: 1000, OriginalTokens: res.tokens(), KeptTokens: p.kept, OmittedBlocks: p.omitted, StructuredContentOmitted: true, File: "/tmp/x/result-1.json", FileFormat: protocol.OutputFileJSON}
	out, err := res.render(p, "MARKER", cut)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Content           []map[string]json.RawMessage `json:"content"`
		StructuredContent json.RawMessage              `json:"structuredContent"`
		IsError           bool                         `json:"isError"`
		Meta              map[string]json.RawMessage   `json:"_meta"`
		Later             json.RawMessage              `json:"later"`
		Rest              map[string]map[string]any    `json:"-"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Content) != 3 {
		t.Fatalf("content %d blocks, want the cut text, the image and the marker: %s", len(got.Content), out)
	}
	if string(got.Content[0]["annotations"]) != `{"priority":0.5}` {
		t.Errorf("cut block lost its annotations: %s", got.Content[0]["annotations"])
	}
	if string(got.Content[1]["data"]) != `"iVBORw0KGgo="` {
		t.Errorf("image %s", got.Content[1]["data"])
	}
	if string(got.Content[2]["text"]) != `"MARKER"` {
		t.Errorf("last block %v, want the marker", got.Content[2])
	}
	if got.StructuredContent != nil || !got.IsError || string(got.Later) != `{"x":1}` || string(got.Meta["trace"]) != `"abc"` {
		t.Errorf("members: %s", out)
	}
	var account protocol.OutputCut
	if err := json.Unmarshal(got.Meta[protocol.MetaOutputCut], &account); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cut, account); diff != "" {
		t.Errorf("_meta account (-want +got):\n%s", diff)
	}
	if n := strings.Count(string(out), protocol.MetaOutputCut); n != 1 {
		t.Errorf("%d members %s: the server's must be replaced", n, protocol.MetaOutputCut)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 25000: "25,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// BenchmarkOutputLimitCheck measures what a result costs on its way to the
// host by its size, at the default limit: a small one (the check on its
// length alone), one of the limit's size in bytes (a pass over them to see
// that they are UTF-8), one under the limit but larger than it in bytes
// (an estimate of its bytes, no decoding), and one over it (decoded,
// counted and cut; the file is not written here).
func BenchmarkOutputLimitCheck(b *testing.B) {
	text := func(n int) json.RawMessage {
		s := strings.Repeat("line of a listing, with words\n", n/30+1)[:n]
		return must(json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}))
	}
	for _, tc := range []struct {
		name string
		raw  json.RawMessage
	}{
		{"small", json.RawMessage(`{"content":[{"type":"text","text":"{\"text\":\"hi\"}"}],"structuredContent":{"text":"hi"}}`)},
		{"20KB", text(20000)},
		{"60KB under", text(60000)},
		{"400KB over", text(400000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if !outputMayExceed(tc.raw, defaultOutputTokens) || outputWithin(tc.raw, defaultOutputTokens) {
					continue
				}
				res, err := parseToolResult(tc.raw)
				if err != nil || res.tokens() <= defaultOutputTokens {
					continue
				}
				p := res.cut(defaultOutputTokens)
				if _, err := res.render(p, "marker", protocol.OutputCut{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOutputFiles: a session's results are files of its own folder (0700,
// each file 0600) in the root given; past the bound the oldest go first;
// close removes the folder, and nothing is written after it.
func TestOutputFiles(t *testing.T) {
	root := t.TempDir()
	o := outputFiles{maxBytes: 100}
	var paths []string
	for i := range 3 {
		p, err := o.write(root, "txt", []byte(strings.Repeat(fmt.Sprint(i), 40)))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	dir := filepath.Dir(paths[0])
	if filepath.Dir(dir) != root || !strings.HasPrefix(filepath.Base(dir), "mcp-sidecar-results-") {
		t.Errorf("folder %s, want mcp-sidecar-results-* in %s", dir, root)
	}
	var have []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			have = append(have, filepath.Base(p))
		}
	}
	if diff := cmp.Diff([]string{"result-2.txt", "result-3.txt"}, have); diff != "" {
		t.Errorf("files kept past the bound (-want +got):\n%s", diff)
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{dir: 0o700, paths[2]: 0o600} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: %v %v, want mode %v", p, fi.Mode().Perm(), err, want)
			}
		}
	}
	if _, err := o.write(root, "txt", make([]byte, 101)); err == nil {
		t.Error("a file larger than the bound was written")
	}
	if err := o.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("folder still there after close: %v", err)
	}
	if _, err := o.write(root, "txt", []byte("x")); !errors.Is(err, errSessionClosing) {
		t.Errorf("write after close: %v, want errSessionClosing", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("left in the root: %v", entries)
	}
}
