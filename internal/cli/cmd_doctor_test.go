package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

var sandboxCap = map[string]json.RawMessage{"codex/sandbox-state": json.RawMessage(`{}`)}

// mcpVersion is an MCP protocol version.
var mcpVersion = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func TestCmdDoctorGoodConfig(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{ToolCount: 3}},
		server{name: "beta", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "one"}}, Experimental: sandboxCap}, extra: map[string]any{"required": true}},
		server{name: "gamma", spec: fixture.Spec{ToolCount: 1}, extra: map[string]any{"enabled": false}},
	)
	r := runCmd(t, nil, "doctor", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("want exit 0: %s", r)
	}
	if !strings.Contains(r.stdout, "Config files read (later ones win):\n  "+cfg+": alpha, beta, gamma\n") {
		t.Errorf("doctor does not say which file it read:\n%s", r.stdout)
	}
	header := "SERVER  "
	rows := tableRows(t, r.stdout, header)
	for _, col := range []string{"SERVER", "TRANSPORT", "STATUS", "STARTUP", "TOOLS", "BYTES", "~TOKENS", "SANDBOX", "LAUNCHER", "MCP", "LAST STDERR"} {
		if !strings.Contains(r.stdout, col) {
			t.Errorf("table lacks column %s", col)
		}
	}
	// Cells: name transport status startup tools bytes tokens sandbox launcher mcp stderr.
	check := func(name, status, tools, sandbox string) {
		t.Helper()
		row := rows[name]
		if len(row) != 11 {
			t.Fatalf("row %s: %q", name, row)
		}
		if !mcpVersion.MatchString(row[9]) {
			t.Errorf("row %s: MCP version %q", name, row[9])
		}
		if row[1] != "stdio" || row[2] != status || row[4] != tools || row[7] != sandbox || row[8] != "no" {
			t.Errorf("row %s = %q, want status %s, %s tools, sandbox %s", name, row, status, tools, sandbox)
		}
		if status != "ready" {
			return
		}
		size, err1 := strconv.Atoi(row[5])
		tokens, err2 := strconv.Atoi(row[6])
		if err1 != nil || err2 != nil || size <= 0 || tokens < size/8 || tokens > size/2 {
			t.Errorf("row %s: bytes %s, tokens %s: want the estimate of JSON, a token per 2 to 8 bytes", name, row[5], row[6])
		}
		if !strings.HasSuffix(row[3], "ms") && !strings.HasSuffix(row[3], "s") {
			t.Errorf("row %s: startup %q is not a duration", name, row[3])
		}
	}
	check("alpha", "ready", "3", "none")
	check("beta*", "ready", "1", "codex/sandbox-state")
	if row := rows["gamma"]; len(row) < 3 || row[2] != "disabled" {
		t.Errorf("gamma row = %q, want disabled", row)
	}
	// Not a terminal: plain progress lines, no escape sequences.
	if !strings.Contains(r.stderr, "alpha  ready") || strings.Contains(r.stderr, "\x1b[") {
		t.Errorf("stderr is not plain progress:\n%q", r.stderr)
	}
}

type doctorJSON struct {
	Files        []string `json:"files"`
	ConfigErrors []struct {
		File, Server, Key, Message string
	} `json:"configErrors"`
	Servers []struct {
		Name           string `json:"name"`
		Status         string `json:"status"`
		Required       bool   `json:"required"`
		Tools          *int   `json:"tools"`
		CatalogBytes   *int   `json:"catalogBytes"`
		TokensEstimate *int   `json:"catalogTokensEstimate"`
		Sandbox        string `json:"sandbox"`
		LastStderr     string `json:"lastStderr"`
		Error          string `json:"error"`
		StartupMs      *int64 `json:"startupMs"`
		// ProtocolVersion and Era are the MCP connection's.
		ProtocolVersion string `json:"protocolVersion"`
		Era             string `json:"era"`
		ExcludedTools   []struct {
			Tool, Reason string
		} `json:"excludedTools"`
	} `json:"servers"`
	TokensEstimate int  `json:"catalogTokensEstimate"`
	OK             bool `json:"ok"`
}

func decodeDoctor(t *testing.T, r result) doctorJSON {
	t.Helper()
	var d doctorJSON
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, r)
	}
	return d
}

func TestCmdDoctorJSON(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{ToolCount: 2}},
		server{name: "beta", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "one"}}, Experimental: sandboxCap}},
	)
	r := runCmd(t, nil, "doctor", "--json", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("want exit 0: %s", r)
	}
	d := decodeDoctor(t, r)
	if !d.OK || len(d.ConfigErrors) != 0 || !cmp.Equal(d.Files, []string{cfg}) {
		t.Errorf("ok %v, errors %v, files %v", d.OK, d.ConfigErrors, d.Files)
	}
	got := map[string]string{}
	total := 0
	for _, s := range d.Servers {
		if s.Tools == nil || s.CatalogBytes == nil || s.TokensEstimate == nil || s.StartupMs == nil {
			t.Fatalf("server %s lacks numbers: %+v", s.Name, s)
		}
		// The sidecar's estimate (servers/status) of JSON: between a
		// token per 8 bytes and one per 2.
		if tok, b := *s.TokensEstimate, *s.CatalogBytes; tok < b/8 || tok > b/2 {
			t.Errorf("server %s: tokens %d for %d bytes", s.Name, tok, b)
		}
		total += *s.TokensEstimate
		got[s.Name] = s.Status + " " + strconv.Itoa(*s.Tools) + " " + s.Sandbox
		if !mcpVersion.MatchString(s.ProtocolVersion) || (s.Era != "modern" && s.Era != "legacy") ||
			(s.Era == "modern") != (s.ProtocolVersion >= "2026-07-28") {
			t.Errorf("server %s: protocolVersion %q, era %q", s.Name, s.ProtocolVersion, s.Era)
		}
	}
	if d.TokensEstimate != total {
		t.Errorf("catalog tokens %d, the servers' sum %d", d.TokensEstimate, total)
	}
	want := map[string]string{"alpha": "ready 2 none", "beta": "ready 1 codex/sandbox-state"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	// --json is for machines: no live display.
	if r.stderr != "" {
		t.Errorf("stderr with --json: %q", r.stderr)
	}
}

func TestCmdDoctorBrokenConfig(t *testing.T) {
	isolate(t)
	good := fixture.Config("good", fixture.Spec{ToolCount: 1})
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	doc := map[string]any{"mcpServers": map[string]any{
		"good":  map[string]any{"command": good.Command, "args": good.Args, "env": good.Env},
		"mixed": map[string]any{"command": "x", "url": "https://example.com/mcp"},
		"typo":  map[string]any{"command": "x", "startup_timeout_sec": "soon"},
	}}
	b, _ := json.Marshal(doc)
	writeFile(t, path, string(b), 0o600)

	r := runCmd(t, nil, "doctor", "--config", path)
	if r.code != 1 {
		t.Fatalf("want exit 1: %s", r)
	}
	for _, want := range []string{
		path + `: server "mixed": key "url": `,
		path + `: server "typo": key "startup_timeout_sec": `,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	rows := tableRows(t, r.stdout, "SERVER  ")
	if row := rows["good"]; len(row) < 3 || row[2] != "ready" {
		t.Errorf("the valid server was not started: %q\n%s", row, r)
	}
	for _, name := range []string{"mixed", "typo"} {
		if row := rows[name]; len(row) < 3 || row[2] != "invalid" {
			t.Errorf("row %s = %q, want invalid", name, row)
		}
	}

	r = runCmd(t, nil, "doctor", "--json", "--config", path)
	if r.code != 1 {
		t.Fatalf("--json: want exit 1: %s", r)
	}
	d := decodeDoctor(t, r)
	if d.OK {
		t.Error("ok is true for a broken config")
	}
	keys := map[string]string{}
	for _, e := range d.ConfigErrors {
		if e.File != path {
			t.Errorf("error names file %q, want %q", e.File, path)
		}
		keys[e.Server] = e.Key
	}
	if want := map[string]string{"typo": "startup_timeout_sec", "mixed": "url"}; !cmp.Equal(keys, want) {
		t.Errorf("config errors name servers/keys %v: %+v", keys, d.ConfigErrors)
	}
}

func TestCmdDoctorFailingServer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		required bool
		want     int
	}{
		{"required", true, 1},
		{"optional", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			cfg := writeConfig(t,
				server{name: "ok", spec: fixture.Spec{ToolCount: 1}},
				server{name: "bad", spec: fixture.Spec{ExitAtStart: true, StderrLines: []string{"loading credentials", "fatal: TOKEN is not set"}}, extra: map[string]any{"required": tc.required}},
			)
			r := runCmd(t, nil, "doctor", "--config", cfg)
			if r.code != tc.want {
				t.Fatalf("want exit %d: %s", tc.want, r)
			}
			name := "bad"
			if tc.required {
				name += "*"
			}
			row := tableRows(t, r.stdout, "SERVER  ")[name]
			// The fixture's last stderr line comes after the given ones.
			const last = "fixture: exiting at start (exitAtStart)"
			if len(row) < 3 || row[2] != "failed" || !strings.HasSuffix(strings.Join(row, " "), last) {
				t.Errorf("row %s = %q, want failed with last stderr line %q", name, row, last)
			}
			if !strings.Contains(r.stdout, "fatal: TOKEN is not set") {
				t.Errorf("the stderr tail is not among the problems:\n%s", r.stdout)
			}

			r = runCmd(t, nil, "doctor", "--json", "--config", cfg)
			if r.code != tc.want {
				t.Fatalf("--json: want exit %d: %s", tc.want, r)
			}
			d := decodeDoctor(t, r)
			for _, s := range d.Servers {
				if s.Name == "bad" && (s.Status != "failed" || s.LastStderr != last || s.Required != tc.required || s.Error == "") {
					t.Errorf("bad server in JSON: %+v", s)
				}
			}
			if d.OK != (tc.want == 0) {
				t.Errorf("ok = %v", d.OK)
			}
		})
	}
}

func TestCmdDoctorDefaultFiles(t *testing.T) {
	isolate(t)
	codexHome := t.TempDir()
	t.Setenv("CODEX_HOME", codexHome)
	r := runCmd(t, nil, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "No config file found. Looked for:\n  "+filepath.Join(codexHome, "config.toml")+" (Codex, user scope)") {
		t.Errorf("without config files: %s", r)
	}

	src, err := os.ReadFile(writeConfig(t, server{name: "alpha", spec: fixture.Spec{ToolCount: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(codexHome, "config.toml")
	writeFile(t, path, string(src), 0o600)
	r = runCmd(t, nil, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "Config files read (later ones win):\n  "+path+" (Codex, user scope): alpha") {
		t.Errorf("with CODEX_HOME/config.toml: %s", r)
	}
}

// TestCmdDoctorExcludedTools: doctor names each tool the catalog leaves out
// for invalid x-mcp-header declarations, and why, and the server's other
// tools are listed.
func TestCmdDoctorExcludedTools(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t, server{name: "hdr", spec: fixture.Spec{Tools: []fixture.ToolSpec{
		{Name: "fine"},
		{Def: json.RawMessage(`{"name":"bad_header","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"My Region"}}}}`)},
	}}})
	r := runCmd(t, nil, "doctor", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("want exit 0 (a warning, not a failure): %s", r)
	}
	if row := tableRows(t, r.stdout, "SERVER  ")["hdr"]; len(row) < 5 || row[2] != "ready" || row[3] != "(warning)" || row[5] != "1" {
		t.Errorf("hdr row = %q, want ready (warning) with 1 tool", row)
	}
	want := `  hdr: tool "bad_header" left out of the catalog: x-mcp-header of property "r": the value "My Region" has ' ', which an HTTP header name cannot have
    Its x-mcp-header declarations break MCP's rules: no harness can call it as the server expects. The server's other tools work.
`
	if !strings.Contains(r.stdout, "\nWarnings:\n"+want) {
		t.Errorf("doctor does not explain the left-out tool; want\n%s\ngot:\n%s", want, r.stdout)
	}
	r = runCmd(t, nil, "doctor", "--json", "--config", cfg)
	d := decodeDoctor(t, r)
	if len(d.Servers) != 1 || len(d.Servers[0].ExcludedTools) != 1 || d.Servers[0].ExcludedTools[0].Tool != "bad_header" || d.Servers[0].ExcludedTools[0].Reason == "" {
		t.Errorf("--json excludedTools: %+v", d.Servers)
	}
}
