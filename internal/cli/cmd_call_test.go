package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// policy has a number no float64 holds and keys out of order: it must
// reach the server as these bytes.
const policy = `{"mode":"workspace-write","writable_roots":["/tmp/w"],"network":false,"budget":12345678901234567890}`

// receivedMeta returns the _meta of each tools/call the fixture read, raw.
func receivedMeta(t *testing.T, rawLog string) []map[string]json.RawMessage {
	t.Helper()
	f, err := os.Open(rawLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Method == "tools/call" {
			for k := range msg.Params.Meta {
				// The protocol's own keys (a 2026-07-28 request names its
				// version, client and capabilities) are the connection's.
				if strings.HasPrefix(k, "io.modelcontextprotocol/") {
					delete(msg.Params.Meta, k)
				}
			}
			out = append(out, msg.Params.Meta)
		}
	}
	return out
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return b.String()
}

func TestCmdCall(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	sbxLog, plainLog := filepath.Join(dir, "sbx.log"), filepath.Join(dir, "plain.log")
	tools := []fixture.ToolSpec{{Name: "echo"}, {Name: "broken", Behavior: fixture.BehaviorFail}}
	cfg := writeConfig(t,
		server{name: "sbx", spec: fixture.Spec{Tools: tools, Experimental: sandboxCap, RawLogFile: sbxLog}},
		server{name: "plain", spec: fixture.Spec{Tools: tools, RawLogFile: plainLog}},
	)
	policyFile := filepath.Join(dir, "policy.json")
	writeFile(t, policyFile, policy+"\n", 0o600)

	t.Run("arguments", func(t *testing.T) {
		r := runCmd(t, nil, "call", "sbx", "echo", `{"text": "hi", "n": 1}`, "--config", cfg)
		if r.code != 0 {
			t.Fatalf("want exit 0: %s", r)
		}
		// The echo tool returns its arguments as text and as
		// structuredContent: shown once.
		for _, want := range []string{
			"{\n  \"text\": \"hi\",\n  \"n\": 1\n}\n",
			"_meta sent to sbx:\n  none\n",
			"sbx advertises codex/sandbox-state, but no --sandbox-state was given",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("sandbox state", func(t *testing.T) {
		r := runCmd(t, nil, "call", "sbx", "echo", "--sandbox-state", policyFile, "--meta", `{"threadId":"t-1"}`, "--config", cfg)
		if r.code != 0 {
			t.Fatalf("want exit 0: %s", r)
		}
		metas := receivedMeta(t, sbxLog)
		if len(metas) == 0 {
			t.Fatal("the fixture logged no tools/call")
		}
		m := metas[len(metas)-1]
		for _, key := range []string{"codex/sandbox-state", "codex/sandbox-state-meta"} {
			if got := compact(t, m[key]); got != policy {
				t.Errorf("server received %s = %s, want %s", key, got, policy)
			}
		}
		if _, ok := m["codex/sandbox-launcher"]; ok {
			t.Error("a launcher was sent without --launcher")
		}
		// What the command says was sent is what the server got.
		for key, val := range m {
			if want := "  " + key + ": " + compact(t, val) + "\n"; !strings.Contains(r.stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
			}
		}
		if compact(t, m["threadId"]) != `"t-1"` {
			t.Errorf("host meta threadId = %s", m["threadId"])
		}
	})

	t.Run("not opted in", func(t *testing.T) {
		r := runCmd(t, nil, "call", "plain", "echo", "{}", "--sandbox-state", policyFile, "--json", "--config", cfg)
		if r.code != 0 {
			t.Fatalf("want exit 0: %s", r)
		}
		var rep struct {
			Result struct {
				Content []struct{ Type, Text string }
			} `json:"result"`
			MetaSent          map[string]json.RawMessage `json:"metaSent"`
			SandboxCapability string                     `json:"sandboxCapability"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r)
		}
		if rep.MetaSent != nil || rep.SandboxCapability != "none" || len(rep.Result.Content) != 1 || rep.Result.Content[0].Text != "{}" {
			t.Errorf("report: %+v", rep)
		}
		metas := receivedMeta(t, plainLog)
		if len(metas) != 1 || len(metas[0]) != 0 {
			t.Errorf("a server that did not opt in received _meta %v", metas)
		}
	})

	t.Run("arguments from stdin", func(t *testing.T) {
		r := runCmd(t, strings.NewReader(`{"from":"stdin"}`), "call", "plain", "echo", "-", "--config", cfg)
		if r.code != 0 || !strings.Contains(r.stdout, "{\n  \"from\": \"stdin\"\n}\n") {
			t.Errorf("%s", r)
		}
	})

	t.Run("tool error", func(t *testing.T) {
		r := runCmd(t, nil, "call", "plain", "broken", "--config", cfg)
		if r.code != 1 || !strings.Contains(r.stdout, "The tool ran and reported an error (isError: true):\ntool broken failed\n") {
			t.Errorf("want exit 1 and the isError result: %s", r)
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown tool", []string{"sbx", "nope"}, `server "sbx" has no tool "nope"`},
		{"unknown server", []string{"nope", "echo"}, `no server "nope" in the config (servers: plain, sbx)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, nil, append(append([]string{"call"}, tc.args...), "--config", cfg)...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("want exit 1 and %q on stderr: %s", tc.want, r)
			}
		})
	}
}

func TestCmdCallLauncher(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	rawLog := filepath.Join(dir, "raw.log")
	cfg := writeConfig(t, server{name: "sbx", spec: fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}, Experimental: sandboxCap, RawLogFile: rawLog}})
	policyFile := filepath.Join(dir, "policy.json")
	writeFile(t, policyFile, policy, 0o600)
	launcher := fakeLauncher(t, true)

	r := runCmd(t, nil, "call", "sbx", "echo", "--sandbox-state", policyFile, "--launcher", launcher, "--config", cfg)
	if r.code != 0 {
		t.Fatalf("want exit 0: %s", r)
	}
	metas := receivedMeta(t, rawLog)
	if len(metas) != 1 {
		t.Fatalf("calls logged: %d", len(metas))
	}
	var got struct{ CodexExecutable string }
	if err := json.Unmarshal(metas[0]["codex/sandbox-launcher"], &got); err != nil || got.CodexExecutable != launcher {
		t.Errorf("server received launcher %s (%v), want %s", metas[0]["codex/sandbox-launcher"], err, launcher)
	}
	want := "  codex/sandbox-launcher: " + compact(t, metas[0]["codex/sandbox-launcher"]) + "\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
	}

	// A launcher that fails the probe is never sent, and the output says why.
	bad := fakeLauncher(t, false)
	r = runCmd(t, nil, "call", "sbx", "echo", "--sandbox-state", policyFile, "--launcher", bad, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "No codex/sandbox-launcher: "+bad+" is unavailable") {
		t.Errorf("bad launcher: %s", r)
	}
	metas = receivedMeta(t, rawLog)
	if _, ok := metas[len(metas)-1]["codex/sandbox-launcher"]; ok || len(metas) != 2 {
		t.Errorf("unverified launcher sent: %v", metas)
	}
	if diff := cmp.Diff(compact(t, metas[1]["codex/sandbox-state"]), policy); diff != "" {
		t.Errorf("policy (-got +want):\n%s", diff)
	}
}
