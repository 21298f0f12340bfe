package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
)

// The search corpus (bench/README.md, "Tool search"): the real
// tools/list of published MCP servers, captured by corpus/capture.sh and
// committed as data.
const (
	corpusServersFile = "corpus/servers.json"
	corpusToolsFile   = "corpus/tools.json"
	// captureEnv names the folder where capture.sh installed the servers;
	// its presence turns TestCaptureCorpus on.
	captureEnv = "MCP_SIDECAR_CORPUS_CAPTURE"
)

// corpusSpec is corpus/servers.json: which packages to capture and how to
// start them.
type corpusSpec struct {
	Comment string             `json:"comment"`
	Servers []corpusServerSpec `json:"servers"`
}

type corpusServerSpec struct {
	Name    string            `json:"name"`
	Package string            `json:"package"`
	Version string            `json:"version"`
	Bin     string            `json:"bin"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// corpusFile is corpus/tools.json: each server's tools as its tools/list
// sent them.
type corpusFile struct {
	Comment string         `json:"comment"`
	Node    string         `json:"node"`
	Servers []corpusServer `json:"servers"`
}

type corpusServer struct {
	Name    string            `json:"name"`
	Package string            `json:"package"`
	Version string            `json:"version"`
	Tools   []json.RawMessage `json:"tools"`
}

// readJSONFile decodes one of the corpus files into v.
func readJSONFile(tb testing.TB, path string, v any) {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// loadCorpus reads corpus/tools.json and parses every server's tools.
func loadCorpus(tb testing.TB) (*corpusFile, []catalog.Tool) {
	tb.Helper()
	var f corpusFile
	readJSONFile(tb, corpusToolsFile, &f)
	var all []catalog.Tool
	for _, s := range f.Servers {
		tools, err := catalog.ParseTools(s.Name, s.Tools)
		if err != nil {
			tb.Fatalf("%s: %v", corpusToolsFile, err)
		}
		all = append(all, tools...)
	}
	catalog.Qualify(all, 0)
	return &f, all
}

// TestCaptureCorpus lists the tools of every server in corpus/servers.json,
// installed by corpus/capture.sh, through the sidecar's own MCP client, and
// rewrites corpus/tools.json. It runs only from capture.sh.
func TestCaptureCorpus(t *testing.T) {
	work := os.Getenv(captureEnv)
	if work == "" {
		t.Skipf("run bench/corpus/capture.sh (it sets %s)", captureEnv)
	}
	var spec corpusSpec
	readJSONFile(t, corpusServersFile, &spec)
	out := corpusFile{
		Comment: "Captured by bench/corpus/capture.sh from the packages of servers.json: each server's tools/list result, each tool byte for byte as the server sent it (one a line).",
		Node:    os.Getenv("MCP_SIDECAR_CORPUS_NODE"),
		Servers: []corpusServer{},
	}
	total := 0
	for _, s := range spec.Servers {
		items, err := captureServer(work, s)
		if err != nil {
			t.Errorf("%s (%s@%s): %v", s.Name, s.Package, s.Version, err)
			continue
		}
		if _, err := catalog.ParseTools(s.Name, items); err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		t.Logf("%-20s %s@%s: %d tools", s.Name, s.Package, s.Version, len(items))
		total += len(items)
		out.Servers = append(out.Servers, corpusServer{Name: s.Name, Package: s.Package, Version: s.Version, Tools: items})
	}
	if t.Failed() {
		return
	}
	t.Logf("%d servers, %d tools", len(out.Servers), total)
	b, err := encodeCorpus(&out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corpusToolsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// encodeCorpus writes the corpus file with each tool on a line of its own,
// byte for byte as its server sent it. An indenting encoder would re-indent
// the tools too, and the token counts and the estimate's fit must be made
// on the bytes tools/list relays, not on pretty-printed ones no server
// sends.
func encodeCorpus(f *corpusFile) ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) {
		enc, _ := json.Marshal(s) // a string always marshals
		b.Write(enc)
	}
	b.WriteString("{\n \"comment\": ")
	str(f.Comment)
	b.WriteString(",\n \"node\": ")
	str(f.Node)
	b.WriteString(",\n \"servers\": [")
	for i, s := range f.Servers {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  {\"name\": ")
		str(s.Name)
		b.WriteString(", \"package\": ")
		str(s.Package)
		b.WriteString(", \"version\": ")
		str(s.Version)
		b.WriteString(", \"tools\": [")
		for j, tool := range s.Tools {
			if !isCompact(tool) {
				return nil, fmt.Errorf("server %s: tool #%d has white space between tokens: not the bytes a server sends", s.Name, j)
			}
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString("\n   ")
			b.Write(tool)
		}
		b.WriteString("\n  ]}")
	}
	b.WriteString("\n ]\n}\n")
	return b.Bytes(), nil
}

// isCompact reports whether the JSON text v has no white space between
// tokens, as JSON.stringify and Go's encoder write it.
func isCompact(v []byte) bool {
	var b bytes.Buffer
	return json.Compact(&b, v) == nil && bytes.Equal(b.Bytes(), v)
}

func captureServer(work string, s corpusServerSpec) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := filepath.Join(work, "run", s.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := &config.ServerConfig{
		Name:    s.Name,
		Command: filepath.Join(work, "node_modules", ".bin", s.Bin),
		Args:    s.Args,
		Env:     s.Env,
		Cwd:     dir,
	}
	conn, err := mcpclient.Connect(ctx, mcpclient.Options{Name: s.Name, Config: cfg, Env: os.LookupEnv})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	items, err := catalog.Paginate(ctx, "tools", catalog.DefaultPageLimits(), conn.ListToolsPage)
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	return items, nil
}

const corpusTokensFile = "corpus/tokens.json"

// corpusTokens is corpus/tokens.json: the real BPE token counts of every
// corpus tool as tools/list shows it (full) and as tools/list with
// schemas: false shows it (summary, its "tokens" member written as 0).
type corpusTokens struct {
	Comment string            `json:"comment"`
	Tools   []corpusToolCount `json:"tools"`
}

type corpusToolCount struct {
	Server        string `json:"server"`
	Tool          string `json:"tool"`
	FullBytes     int    `json:"fullBytes"`
	FullO200k     int    `json:"fullO200k"`
	FullCl100k    int    `json:"fullCl100k"`
	SummaryBytes  int    `json:"summaryBytes"`
	SummaryO200k  int    `json:"summaryO200k"`
	SummaryCl100k int    `json:"summaryCl100k"`
}

// toolForms returns the full and summary forms of a corpus tool, as the
// token counts were made of them.
func toolForms(tb testing.TB, t *catalog.Tool) (full, summary []byte) {
	full, err := t.WireJSON()
	if err != nil {
		tb.Fatal(err)
	}
	summary, err = t.SummaryJSON(0)
	if err != nil {
		tb.Fatal(err)
	}
	return full, summary
}

func loadCorpusTokens(tb testing.TB) []corpusToolCount {
	tb.Helper()
	var f corpusTokens
	readJSONFile(tb, corpusTokensFile, &f)
	return f.Tools
}

// TestCountCorpusTokens counts the real tokens of the corpus with
// js-tiktoken (corpus/tokens.mjs) and rewrites corpus/tokens.json. It runs
// only from capture.sh.
func TestCountCorpusTokens(t *testing.T) {
	work := os.Getenv(captureEnv)
	if work == "" {
		t.Skipf("run bench/corpus/capture.sh (it sets %s)", captureEnv)
	}
	_, tools := loadCorpus(t)
	var strs []string
	for i := range tools {
		full, summary := toolForms(t, &tools[i])
		strs = append(strs, string(full), string(summary))
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	raw, _ := json.Marshal(strs)
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "corpus/tokens.mjs", in, out)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(work, "node_modules"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tokens.mjs: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var counts []struct{ O200k, Cl100k int }
	if err := json.Unmarshal(raw, &counts); err != nil || len(counts) != len(strs) {
		t.Fatalf("tokens.mjs output: %v (%d counts for %d strings)", err, len(counts), len(strs))
	}
	f := corpusTokens{Comment: "Real BPE token counts (js-tiktoken 1.0.21: o200k_base, cl100k_base) of each corpus tool as tools/list shows it (full) and with schemas: false (summary, tokens member written as 0). Made by capture.sh (TestCountCorpusTokens)."}
	for i := range tools {
		full, summary := strs[2*i], strs[2*i+1]
		f.Tools = append(f.Tools, corpusToolCount{
			Server: tools[i].Server, Tool: tools[i].Name,
			FullBytes: len(full), FullO200k: counts[2*i].O200k, FullCl100k: counts[2*i].Cl100k,
			SummaryBytes: len(summary), SummaryO200k: counts[2*i+1].O200k, SummaryCl100k: counts[2*i+1].Cl100k,
		})
	}
	var b bytes.Buffer
	b.WriteString("{\n \"comment\": ")
	c, _ := json.Marshal(f.Comment)
	b.Write(c)
	b.WriteString(",\n \"tools\": [\n")
	for i, tc := range f.Tools {
		line, _ := json.Marshal(tc)
		b.WriteString("  ")
		b.Write(line)
		if i < len(f.Tools)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(" ]\n}\n")
	if err := os.WriteFile(corpusTokensFile, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tools counted", len(f.Tools))
}

// TestCorpusIsWireBytes: every corpus tool is the bytes its server sent,
// without white space between tokens (the npm servers write JSON.stringify's
// output), which is what tools/list relays to the host and what the token
// counts and the estimate's weights must be made of.
func TestCorpusIsWireBytes(t *testing.T) {
	f, tools := loadCorpus(t)
	if len(tools) == 0 {
		t.Fatalf("%s has no tools", corpusToolsFile)
	}
	for _, s := range f.Servers {
		for i, tool := range s.Tools {
			if !isCompact(tool) {
				t.Errorf("%s: server %s, tool #%d has white space between tokens: run bench/corpus/capture.sh", corpusToolsFile, s.Name, i)
			}
		}
	}
	// The file is what encodeCorpus writes: capture.sh leaves no diff.
	raw, err := os.ReadFile(corpusToolsFile)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := encodeCorpus(f); err != nil || !bytes.Equal(b, raw) {
		t.Errorf("%s is not as encodeCorpus writes it (err %v)", corpusToolsFile, err)
	}
}
