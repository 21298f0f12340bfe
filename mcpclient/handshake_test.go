package mcpclient

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// handshakes are the handshake requests the server read, in order:
// "server/discover <version>" or "initialize <version>".
func handshakes(t *testing.T, rawLog string) []string {
	t.Helper()
	var out []string
	for _, l := range fixture.ReadLines(rawLog) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Meta            struct {
					ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m.Method {
		case "server/discover":
			out = append(out, m.Method+" "+m.Params.Meta.ProtocolVersion)
		case "initialize":
			out = append(out, m.Method+" "+m.Params.ProtocolVersion)
		}
	}
	return out
}

// TestNegotiation: what a connection offers and what it settles on, by the
// server's answers (MCP 2026-07-28, "Backward Compatibility" of the
// versioning and stdio pages), the config's protocol_version and the
// sidecar's era hint.
func TestNegotiation(t *testing.T) {
	unsupported := func(supported string) json.RawMessage {
		return json.RawMessage(`{"code":-32022,"message":"Unsupported protocol version","data":{"supported":` + supported + `,"requested":"2026-07-28"}}`)
	}
	for _, tc := range []struct {
		name    string
		wait    time.Duration // the probe's bound; 0: long enough for any answer
		raw     fixture.RawSpec
		pin     string
		hint    Era
		want    []string // the handshakes the server read
		era     Era
		version string
	}{
		{name: "legacy server: -32601 to the probe", want: []string{"server/discover 2026-07-28", "initialize 2025-11-25"}, era: EraLegacy, version: "2025-11-25"},
		{name: "modern server", raw: fixture.RawSpec{Results: map[string]json.RawMessage{"server/discover": json.RawMessage(modernDiscover)}},
			want: []string{"server/discover 2026-07-28"}, era: EraModern, version: "2026-07-28"},
		{name: "-32022 naming 2026-07-28: asked again, once", raw: fixture.RawSpec{Errors: map[string]json.RawMessage{"server/discover": unsupported(`["2026-07-28"]`)}},
			// The raw server refuses every discover: the second refusal is
			// the connection's error, not a fallback.
			want: []string{"server/discover 2026-07-28", "server/discover 2026-07-28"}},
		{name: "-32022 naming 2025-11-25 only: initialize of that version", raw: fixture.RawSpec{Errors: map[string]json.RawMessage{"server/discover": unsupported(`["2025-06-18"]`)}},
			want: []string{"server/discover 2026-07-28", "initialize 2025-06-18"}, era: EraLegacy, version: "2025-06-18"},
		{name: "a DiscoverResult of initialize versions", raw: fixture.RawSpec{Results: map[string]json.RawMessage{"server/discover": json.RawMessage(`{"supportedVersions":["2025-06-18","2025-03-26"],"capabilities":{}}`)}},
			want: []string{"server/discover 2026-07-28", "initialize 2025-06-18"}, era: EraLegacy, version: "2025-06-18"},
		{name: "{} to the probe (a legacy server that answers what it does not know so)", raw: fixture.RawSpec{Results: map[string]json.RawMessage{"server/discover": json.RawMessage(`{}`)}},
			want: []string{"server/discover 2026-07-28", "initialize 2025-11-25"}, era: EraLegacy, version: "2025-11-25"},
		{name: "{} with 2026-07-28 pinned", pin: "2026-07-28", raw: fixture.RawSpec{Results: map[string]json.RawMessage{"server/discover": json.RawMessage(`{}`)}},
			want: []string{"server/discover 2026-07-28"}},
		{name: "pinned 2025-11-25: no probe", pin: "2025-11-25", want: []string{"initialize 2025-11-25"}, era: EraLegacy, version: "2025-11-25"},
		{name: "pinned 2026-07-28: no fallback", pin: "2026-07-28", want: []string{"server/discover 2026-07-28"}},
		{name: "legacy hint: no probe", hint: EraLegacy, want: []string{"initialize 2025-11-25"}, era: EraLegacy, version: "2025-11-25"},
		{name: "legacy hint proven wrong: probed again", hint: EraLegacy,
			raw: fixture.RawSpec{
				Results: map[string]json.RawMessage{"server/discover": json.RawMessage(modernDiscover)},
				Errors:  map[string]json.RawMessage{"initialize": json.RawMessage(`{"code":-32601,"message":"\"initialize\" is not supported in the new protocol"}`)},
			},
			want: []string{"initialize 2025-11-25", "server/discover 2026-07-28"}, era: EraModern, version: "2026-07-28"},
		{name: "legacy hint, the server dies of initialize: probed again on a new process", hint: EraLegacy,
			raw:  fixture.RawSpec{Results: map[string]json.RawMessage{"server/discover": json.RawMessage(modernDiscover)}, ExitOn: "initialize"},
			want: []string{"initialize 2025-11-25", "server/discover 2026-07-28"}, era: EraModern, version: "2026-07-28"},
		{name: "modern hint, probe unanswered: the probe's bound holds", hint: EraModern, wait: 300 * time.Millisecond, raw: fixture.RawSpec{Unanswered: []string{"server/discover"}},
			want: []string{"server/discover 2026-07-28", "initialize 2025-11-25"}, era: EraLegacy, version: "2025-11-25"},
		{name: "probe unanswered: initialize on the same process", wait: 300 * time.Millisecond, raw: fixture.RawSpec{Unanswered: []string{"server/discover"}},
			want: []string{"server/discover 2026-07-28", "initialize 2025-11-25"}, era: EraLegacy, version: "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawLog := filepath.Join(t.TempDir(), "raw.log")
			raw := tc.raw
			cfg := fixture.Config("fx", fixture.Spec{RawLogFile: rawLog, Raw: &raw})
			cfg.ProtocolVersion = tc.pin
			wait := tc.wait
			if wait == 0 {
				wait = 20 * time.Second // a loaded machine must not turn an answer into a timeout
			}
			c, err := Connect(testCtx(t), Options{Name: "fx", Config: cfg, Era: tc.hint, probeWait: wait})
			if tc.era == EraUnknown {
				if err == nil {
					c.Close()
					t.Fatalf("Connect succeeded at %s", c.ProtocolVersion())
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if c.Era() != tc.era || c.ProtocolVersion() != tc.version {
					t.Errorf("Era() = %q, ProtocolVersion() = %q; want %q, %q", c.Era(), c.ProtocolVersion(), tc.era, tc.version)
				}
				// The connection works in the era it settled on.
				if _, err := c.CallTool(testCtx(t), "echo", nil, nil); err != nil {
					t.Errorf("a call: %v", err)
				}
			}
			if diff := cmp.Diff(tc.want, handshakes(t, rawLog)); diff != "" {
				t.Errorf("handshakes the server read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProbeKillsServer: a server that dies of the server/discover probe is
// started again and goes straight to initialize.
func TestProbeKillsServer(t *testing.T) {
	inits := filepath.Join(t.TempDir(), "inits")
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{InitCountFile: inits, Raw: &fixture.RawSpec{ExitOn: "server/discover"}})})
	if c.Era() != EraLegacy {
		t.Errorf("Era() = %q", c.Era())
	}
	lines := fixture.ReadLines(inits)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "initialize ") || strings.Fields(lines[0])[1] != itoa(c.PID()) {
		t.Errorf("initialize lines %q, want one, from the second process %d", lines, c.PID())
	}
	if _, err := c.CallTool(testCtx(t), "echo", nil, nil); err != nil {
		t.Errorf("a call: %v", err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestModernMetaIsTheConnections: the caller's _meta goes to a modern
// server beside the connection's own keys, byte for byte, but cannot
// replace them; its other keys of the protocol's space pass.
func TestModernMetaIsTheConnections(t *testing.T) {
	rawLog := filepath.Join(t.TempDir(), "raw.log")
	c := connect(t, Options{Config: fixture.Config("fx", rawModern(rawLog, nil))})
	_, err := c.CallTool(testCtx(t), "echo", json.RawMessage(`{}`), map[string]any{
		"io.modelcontextprotocol/protocolVersion": "1999-01-01",
		"io.modelcontextprotocol/clientInfo":      json.RawMessage(`{"name":"evil"}`),
		"io.modelcontextprotocol/logLevel":        "emergency",
		"io.modelcontextprotocol/related-task":    json.RawMessage(`{"taskId":"t1"}`),
		"codex/sandbox-state":                     json.RawMessage(`{"b":1,"a":12345678901234567890}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range fixture.ReadLines(rawLog) {
		if strings.Contains(l, `"tools/call"`) {
			line = l
		}
	}
	for _, want := range []string{
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28"`,
		`"io.modelcontextprotocol/clientInfo":{"name":"mcp-sidecar","version":"dev"}`,
		`"io.modelcontextprotocol/clientCapabilities":{}`,
		`"io.modelcontextprotocol/logLevel":"debug"`,
		`"codex/sandbox-state":{"b":1,"a":12345678901234567890}`,
		// The protocol's space holds the caller's keys too: only those
		// the connection sets are its own.
		`"io.modelcontextprotocol/related-task":{"taskId":"t1"}`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("tools/call line lacks %s:\n%s", want, line)
		}
	}
	for _, not := range []string{"1999-01-01", "evil", "emergency"} {
		if strings.Contains(line, not) {
			t.Errorf("tools/call line carries the caller's %s:\n%s", not, line)
		}
	}
}

// TestStaleLegacyHintBothFail: a legacy-hinted server that dies of
// initialize and, started again, refuses server/discover fails its startup
// with an error that says both.
func TestStaleLegacyHintBothFail(t *testing.T) {
	rawLog := filepath.Join(t.TempDir(), "raw.log")
	spec := fixture.Spec{RawLogFile: rawLog, Raw: &fixture.RawSpec{ExitOn: "initialize"}}
	c, err := Connect(testCtx(t), Options{Name: "fx", Config: fixture.Config("fx", spec), Era: EraLegacy})
	if err == nil {
		c.Close()
		t.Fatal("Connect succeeded")
	}
	for _, want := range []string{`server "fx": initialize failed: `, "exit status 4", "server/discover, tried in case the server changed protocol, failed too"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if diff := cmp.Diff([]string{"initialize 2025-11-25", "server/discover 2026-07-28"}, handshakes(t, rawLog)); diff != "" {
		t.Errorf("handshakes the server read (-want +got):\n%s", diff)
	}
}
