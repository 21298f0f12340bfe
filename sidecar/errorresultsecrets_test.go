package sidecar_test

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// What a server writes into a tool's error result (isError true) is
// scrubbed like its error messages: the values of its command line's
// secret flags (--api-key VALUE, --token=VALUE), in their base64 forms
// too, and what ${VAR} put into its URL's path, though that looks like no
// key; a result that is not an error goes as the server sent it.
func TestErrorResultSecretsNeverShown(t *testing.T) {
	const (
		flagKey  = "flag-s3cr3t-4720"
		flagEq   = "flageq-s3cr3t-4721"
		pathWord = "plainpathword4722" // looks like no key (redact.PathSegmentSecret)
	)
	basic := base64.StdEncoding.EncodeToString([]byte("someone:" + flagKey))
	flags := fixture.Config("flags", fixture.Spec{Tools: []fixture.ToolSpec{tool("fail", fixture.BehaviorFail), tool("echo", fixture.BehaviorEcho)}})
	flags.Args = append(flags.Args, "--api-key", flagKey, "--token="+flagEq)
	leaky := leakyHTTPServer(t)
	t.Setenv("SIDECAR_TEST_PATH_WORD", pathWord)
	mcpJSON := filepath.Join(t.TempDir(), ".mcp.json")
	entry, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"pathy": map[string]any{"type": "http", "url": leaky.URL + "/${SIDECAR_TEST_PATH_WORD}/mcp"}}})
	if err := os.WriteFile(mcpJSON, entry, 0o600); err != nil {
		t.Fatal(err)
	}

	logs := new(lockedBuffer)
	h := newLoggedHarness(t, sidecar.Hooks{}, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	h.initialize(map[string]*config.ServerConfig{"flags": flags}, map[string]any{"configFiles": []string{mcpJSON}})
	open := h.open(map[string]any{"startup": "eager"})
	h.waitComplete(open.SessionID, 0)

	var seen []string
	msg := "refused key " + flagKey + ", token " + flagEq + ", header Basic " + basic
	res, err := h.callTool(map[string]any{"sessionId": open.SessionID, "server": "flags", "tool": "fail", "arguments": map[string]any{"message": msg}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "refused key REDACTED, token REDACTED, header Basic ") {
		t.Errorf("error result %s: want the server's words, redacted", res)
	}
	seen = append(seen, string(res))
	_, err = h.callTool(map[string]any{"sessionId": open.SessionID, "server": "pathy", "tool": "leak"})
	if err == nil {
		t.Fatal("the leaky tool succeeded")
	}
	pe, data := h.rpcError(err)
	raw, _ := json.Marshal(data)
	if !strings.Contains(pe.Message, "REDACTED") {
		t.Errorf("error %q: want the URI it quotes redacted", pe.Message)
	}
	seen = append(seen, pe.Message, string(raw))

	// A result that is no error is the tool's data: as it came.
	res, err = h.callTool(map[string]any{"sessionId": open.SessionID, "server": "flags", "tool": "echo", "arguments": map[string]any{"k": flagKey}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), flagKey) {
		t.Errorf("a result that is no error was changed: %s", res)
	}
	var status json.RawMessage
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": open.SessionID}, &status); err != nil {
		t.Fatal(err)
	}
	seen = append(seen, string(status))
	all := strings.Join(seen, "\n")
	for _, s := range []string{flagKey, flagEq, pathWord, basic} {
		if strings.Contains(all, s) {
			t.Errorf("the host saw %q:\n%s", s, all)
		}
		if strings.Contains(string(logs.Bytes()), s) && s != flagKey {
			t.Errorf("the sidecar's log shows %q", s)
		}
	}
}
