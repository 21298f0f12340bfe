package config

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

// heapAllocs is the bytes the program has allocated on the heap so far:
// what a parse allocated bounds how far it can have grown the heap.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// hostileFiles are files a cloned repository could hold, each past one of
// the limits of shape.go. The first ones are the red team's (F1):
// before the limits, inline.toml took 1.1 GB and 2.8 s, and deep-1m.json
// overflowed the goroutine stack (a fatal error, not a panic).
func hostileFiles() []struct {
	name, file, body string
	line, column     int
	limit            string
} {
	rep := strings.Repeat
	header := "[mcp_servers.x]\ncommand = \"echo\"\n"
	var keys strings.Builder
	for i := range 60_000 {
		fmt.Fprintf(&keys, "k%d = 1\n", i)
	}
	return []struct {
		name, file, body string
		line, column     int
		limit            string
	}{
		{"nested inline tables", "config.toml", header + "env = " + rep("{a=", 5000) + "1" + rep("}", 5000) + "\n",
			3, 191, "nested more than 64 levels deep"},
		{"nested arrays", "config.toml", header + "args = " + rep("[", 5000) + rep("]", 5000) + "\n",
			3, 69, "nested more than 64 levels deep"},
		{"unclosed arrays", "config.toml", header + "args = [" + rep("[", 100_000) + "\n",
			3, 69, "nested more than 64 levels deep"},
		{"unclosed arrays", ".mcp.json", rep("[", 200_000), 1, 65, "nested more than 64 levels deep"},
		{"a megabyte of [", ".mcp.json", rep("[", 1_000_000), 1, 65, "nested more than 64 levels deep"},
		{"nested arrays", ".mcp.json", `{"mcpServers":{"x":{"command":"echo","args":` + rep("[", 5000) + rep("]", 5000) + `}}}`,
			1, 106, "nested more than 64 levels deep"},
		{"a key given 200,000 times", ".mcp.json", `{"mcpServers":{` + rep(`"s":{"command":"echo"},`, 200_000) + `"t":{"command":"echo"}}}`,
			1, 574_997, "more than 50000 values"},
		{"comments hide nothing", ".vscode/mcp.json", "// [[[\n/* {{{ */ {\"servers\": {\"a\": {\"command\": \"x\", \"args\": " + rep("[", 70) + rep("]", 70) + "}}}",
			2, 115, "nested more than 64 levels deep"},
		{"dotted key", "config.toml", "a" + rep(".a", 5000) + " = 1\n", 1, 1, "nested more than 64 levels deep"},
		{"dotted table", "config.toml", "[a" + rep(".a", 5000) + "]\n", 1, 1, "nested more than 64 levels deep"},
		{"long table name, many keys", "config.toml", "[" + rep("a", 50_000) + "]\n" + keys.String(),
			21, 1, "key names too long or too deep"},
		{"deep table, many keys", "config.toml", "[" + strings.Join(slices.Repeat([]string{"a"}, 60), ".") + "]\n" + keys.String(),
			1009, 1, "key names too long or too deep"},
		{"many keys", "config.toml", keys.String(), 48_168, 1, "key names too long or too deep"},
		{"arrays of tables", "config.toml", rep("[[a]]\n", 60_000), 50_001, 1, "more than 50000 values"},
		{"array elements", "config.toml", "x = [" + rep("0,", 60_000) + "0]\n", 1, 100_003, "more than 50000 values"},
		{"array elements", ".mcp.json", `{"mcpServers":{},"x":[` + rep("0,", 60_000) + "0]}", 1, 100_016, "more than 50000 values"},
		{"history around Claude Code's servers", ".claude.json", `{"mcpServers":` + rep("[", 65) + rep("]", 65) + "}",
			1, 78, "nested more than 64 levels deep"},
		{"many Claude Code servers", ".claude.json", `{"history":[` + rep("0,", 60_000) + `0], "mcpServers":{` + rep(`"s":{"command":"echo"},`, 60_000) + `"t":{}}}`,
			1, 120_053 + 23*24_999, "more than 50000 values"},
	}
}

// TestHostileConfigFiles: a file past a limit is one error naming the
// file, the line and column, and the limit; parsing it allocates a small
// multiple of its size, where before it took up to a gigabyte.
func TestHostileConfigFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range hostileFiles() {
		t.Run(tt.name+" "+tt.file, func(t *testing.T) {
			path := writeFile(t, dir, tt.file, tt.body)
			src := Source{Path: path}
			if tt.file == ".claude.json" {
				src.Format = FormatClaudeUser
			}
			runtime.GC()
			before := heapAllocs()
			r := loadSource(src, MapLookup(nil))
			allocated := heapAllocs() - before
			// Reading costs the file's size once or twice; nothing grows
			// with its structure.
			if limit := uint64(4*len(tt.body) + 1<<20); allocated > limit {
				t.Errorf("parsing a %d-byte file allocated %d bytes, want at most %d", len(tt.body), allocated, limit)
			}
			if len(r.errs) != 1 {
				t.Fatalf("errors: %v, want one", r.errs)
			}
			e := r.errs[0]
			if e.File != path || e.Line != tt.line || e.Column != tt.column || !strings.Contains(e.Message, tt.limit) {
				t.Errorf("error %+v, want file %s, line %d, column %d, %q", e, path, tt.line, tt.column, tt.limit)
			}
			if want := fmt.Sprintf("at line %d, column %d", tt.line, tt.column); !strings.Contains(e.Message, want) {
				t.Errorf("message %q does not say %q", e.Message, want)
			}
		})
	}
}

// TestHostileFileSinksNoOther: files past a limit are reported, and the
// good files around them still load.
func TestHostileFileSinksNoOther(t *testing.T) {
	dir := t.TempDir()
	var sources []Source
	for i, tt := range hostileFiles()[:3] {
		sources = append(sources, Source{Path: writeFile(t, dir, fmt.Sprintf("%d/%s", i, tt.file), tt.body)})
		sources = append(sources, Source{Path: writeFile(t, dir, fmt.Sprintf("%d/.mcp.json", i), fmt.Sprintf(`{"mcpServers": {"good%d": {"command": "echo"}}}`, i))})
	}
	l := Load(sources, nil, MapLookup(nil))
	if diff := cmp.Diff([]string{"good0", "good1", "good2"}, l.Names()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if len(l.Errors) != 3 {
		t.Fatalf("errors: %v, want 3", l.Errors)
	}
	for i, e := range l.Errors {
		if e.File != sources[2*i].Path || l.Sources[2*i].Err != e {
			t.Errorf("error %d: %+v, source %+v", i, e, l.Sources[2*i])
		}
	}
}

// TestShapeWithinLimits: what real files hold passes, up to the limits
// exactly, and the lexing of strings, comments and keys does not miscount.
func TestShapeWithinLimits(t *testing.T) {
	rep := strings.Repeat
	toml64 := "[" + strings.Join(slices.Repeat([]string{"a"}, 62), ".") + "]\nb = 1\nc = [\n# ]]]\n 1, # [[[\n]\n"
	tests := []struct {
		name, file, body string
		want             string // "" when within the limits, else the limit
	}{
		{"64 levels of arrays", "config.toml", "x = " + rep("[", 63) + rep("]", 63), ""},
		{"65 levels of arrays", "config.toml", "x = " + rep("[", 64) + rep("]", 64), "nested more than 64"},
		{"64 levels of tables and arrays", "config.toml", toml64, ""},
		{"64 levels of inline tables", "config.toml", "[mcp_servers.x]\nenv = " + rep("{a=", 61) + "1" + rep("}", 61), ""},
		{"65 levels of inline tables", "config.toml", "[mcp_servers.x]\nenv = " + rep("{a=", 62) + "1" + rep("}", 62), "nested more than 64"},
		{"inline tables over lines", "config.toml", "x = {\n a = [ # [[[[\n {b = 1},\n ],\n}\n" + "y = " + rep("[", 62) + rep("]", 62), ""},
		{"brackets in strings", "config.toml", `a = "[[[[\"{{{{"` + "\n" + `b = '[[[[{{{{'` + "\n" + "c = \"\"\"\n[[[[\\\"\"\"{{{{\n\"\"\"\"\nd = '''\n[[[{{{\n''''\n" + "e = " + rep("[", 63) + rep("]", 63), ""},
		{"brackets in quoted keys", "config.toml", `"[[[[" = 1` + "\n" + `['a.b'."{{{{"]` + "\nc = " + rep("[", 61) + rep("]", 61), ""},
		{"dots in quoted keys", "config.toml", `"a.a.a.a.a.a.a.a.a.a" = ` + rep("[", 63) + rep("]", 63), ""},
		{"dotted keys count", "config.toml", "a.b.c = " + rep("[", 62) + rep("]", 62), "nested more than 64"},
		{"a comment after a header", "config.toml", "[a] # [[[[[\nb = " + rep("[", 62) + rep("]", 62), ""},
		{"array of tables", "config.toml", "[[a.b]]\nc = " + rep("[", 61) + rep("]", 61), ""},
		{"64 levels of JSON", ".mcp.json", `{"mcpServers": {}, "x": ` + rep("[", 63) + rep("]", 63) + "}", ""},
		{"65 levels of JSON", ".mcp.json", `{"mcpServers": {}, "x": ` + rep("[", 64) + rep("]", 64) + "}", "nested more than 64"},
		{"brackets in JSON strings", ".mcp.json", `{"mcpServers": {"[[[": {"command": "\"[[[[{{{{", "args": ["` + rep("[", 100) + `"]}}}`, ""},
		{"50,000 values", ".mcp.json", `{"mcpServers": {}, "x": [` + rep("0,", 49_996) + "0]}", ""},
		{"50,001 values", ".mcp.json", `{"mcpServers": {}, "x": [` + rep("0,", 49_997) + "0]}", "more than 50000 values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *Error
			if strings.HasSuffix(tt.file, ".toml") {
				e = checkTOMLShape(tt.file, []byte(tt.body))
				if tt.want == "" {
					var v map[string]any
					if _, err := toml.Decode(tt.body, &v); err != nil {
						t.Fatalf("not valid TOML: %v", err)
					}
				}
			} else {
				e = checkJSONShape(tt.file, []byte(tt.body), 0, len(tt.body), true)
			}
			switch {
			case tt.want == "" && e != nil:
				t.Errorf("refused: %v", e)
			case tt.want != "" && (e == nil || !strings.Contains(e.Message, tt.want)):
				t.Errorf("got %v, want %q", e, tt.want)
			}
		})
	}
}

// TestExpansionBounded: references that expand to more than maxExpansion
// in all make the servers using them invalid, with a clear problem,
// without building the expanded strings.
func TestExpansionBounded(t *testing.T) {
	long := strings.Repeat("/x", 2048) // a PATH, or a deep ${workspaceFolder}
	env := MapLookup(map[string]string{"LONG": long})
	refs := strings.Repeat("${LONG}", 100_000)
	dir := t.TempDir()
	path := writeFile(t, dir, ".mcp.json", `{"mcpServers": {"few": {"command": "${LONG}"}, "many": {"command": "x", "args": ["`+refs+`"]}}}`)
	runtime.GC()
	before := heapAllocs()
	r := loadSource(Source{Path: path}, env)
	allocated := heapAllocs() - before
	if got := r.valid(); len(got) != 1 || got["few"] == nil || got["few"].Command != long {
		t.Errorf("valid servers: %v, want few", got)
	}
	if len(r.errs) != 1 || r.errs[0].Server != "many" || !strings.Contains(r.errs[0].Message, "expand to more than 1048576 bytes") {
		t.Errorf("errors: %v", r.errs)
	}
	if limit := uint64(4*len(refs) + 8*maxExpansion); allocated > limit {
		t.Errorf("allocated %d bytes, want at most %d (the expanded string would be %d)", allocated, limit, 100_000*len(long))
	}
}

// TestClaudeJSONReadsOnlyServers: of ~/.claude.json only the mcpServers
// objects are decoded: the rest (Claude Code's history and state) is
// walked over; a key given twice counts last, as in Claude Code.
func TestClaudeJSONReadsOnlyServers(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "p")
	var history strings.Builder
	for i := range 40_000 {
		fmt.Fprintf(&history, `{"display": "prompt %d", "pastedContents": {}},`, i)
	}
	body := fmt.Sprintf(`{
  "numStartups": 3,
  "mcpServers": {"first": {"command": "echo"}},
  "projects": {
    %q: {"history": [%s {}], "mcpServers": {"old": {"command": "echo"}}, "mcpServers": {"local": {"command": "echo"}}},
    "/elsewhere": {"history": [%s {}], "mcpServers": {"other": {"command": "echo"}}}
  },
  "mcpServers": {"user": {"command": "echo"}}
}`, project, history.String(), history.String())
	path := writeFile(t, home, ".claude.json", body)
	found, _ := Discover(DiscoverOptions{Home: home, Cwd: project, Tools: []string{ToolClaude}})
	runtime.GC()
	before := heapAllocs()
	l := Load(found, nil, MapLookup(nil))
	allocated := heapAllocs() - before
	if len(l.Errors) != 0 {
		t.Fatalf("errors: %v", l.Errors)
	}
	got := map[string]string{}
	for name, c := range l.Servers {
		got[name] = c.Origin.Scope
	}
	if diff := cmp.Diff(map[string]string{"user": ScopeUser, "local": ScopeLocal}, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	// Two reads of the file (user and local scope), and no syntax tree of
	// its 80,000 history entries.
	if limit := uint64(4*len(body) + 1<<20); allocated > limit {
		t.Errorf("loading a %d-byte ~/.claude.json allocated %d bytes, want at most %d", len(body), allocated, limit)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"mcpServers": {}} x`, "invalid JSON at line 1, column 20: invalid character 'x' after top-level value"},
		{`{"mcpServers": {"a": }}`, "invalid JSON at line 1, column 22: invalid character '}' looking for beginning of value"},
		{"{\"projects\": {\n\"/p\": [}}", "invalid JSON at line 2, column 8: invalid character '}' looking for beginning of value"},
		{`{"mcpServers": {"a": {}`, "invalid JSON at line 1, column 24: unexpected end of input"},
		{`{"mcpServers": []}`, `key "mcpServers": expected an object mapping server names to settings`},
	} {
		writeFile(t, home, ".claude.json", tt.body)
		l := Load([]Source{{Path: path, Format: FormatClaudeUser}}, nil, MapLookup(nil))
		if len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Error(), tt.want) {
			t.Errorf("%s: errors %v, want %q", tt.body, l.Errors, tt.want)
		}
	}
}

// treeDepth is how deep v nests: 0 for a scalar, one more than its
// deepest element for an array or a table.
func treeDepth(v any) int {
	depth := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			depth = max(depth, treeDepth(e))
		}
	case []any:
		for _, e := range v {
			depth = max(depth, treeDepth(e))
		}
	case []map[string]any:
		for _, e := range v {
			depth = max(depth, treeDepth(e)+1)
		}
	default:
		return 0
	}
	return depth + 1
}

// checkShapeHolds asserts, for fuzzed input, that what passes the shape
// check nests no deeper than maxNesting once decoded: the check never
// loses track of brackets in strings or comments. In TOML a table of an
// array of tables is one level per name part for the check and two once
// decoded, and an empty inline table one more.
func checkShapeHolds(t *testing.T, data []byte, isTOML bool) {
	t.Helper()
	var v any
	limit := maxNesting
	if isTOML {
		if checkTOMLShape("f", data) != nil {
			return
		}
		var m map[string]any
		if _, err := toml.Decode(string(data), &m); err != nil {
			return
		}
		v, limit = m, 2*maxNesting+1
	} else {
		if checkJSONShape("f", data, 0, len(data), true) != nil {
			return
		}
		var err *Error
		if v, err = decodeJSONC("f", data); err != nil {
			return
		}
	}
	if d := treeDepth(v); d > limit {
		t.Errorf("the shape check passed a file that nests %d levels deep", d)
	}
}

// BenchmarkHostileConfigFiles reports what parsing each hostile file
// costs (-benchmem: B/op); run it on a tree without shape.go's checks for
// the baseline.
func BenchmarkHostileConfigFiles(b *testing.B) {
	dir := b.TempDir()
	for _, tt := range hostileFiles() {
		b.Run(strings.ReplaceAll(tt.name+" "+tt.file, " ", "_"), func(b *testing.B) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"), tt.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				b.Fatal(err)
			}
			src := Source{Path: path}
			if tt.file == ".claude.json" {
				src.Format = FormatClaudeUser
			}
			b.ReportAllocs()
			for b.Loop() {
				loadSource(src, MapLookup(nil))
			}
		})
	}
}
