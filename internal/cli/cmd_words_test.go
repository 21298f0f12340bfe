package cli_test

import (
	"encoding/json"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/schema"
)

// protocolWords matches the host protocol's own words where people read
// them: its method and notification names, its params and its error
// codes. The commands for people speak of flags, config keys and files.
func protocolWords(t *testing.T) *regexp.Regexp {
	t.Helper()
	var doc struct {
		Requests, Notifications, HostRequests []struct{ Method string }
	}
	if err := json.Unmarshal(schema.Document, &doc); err != nil {
		t.Fatal(err)
	}
	words := []string{`\binitialize\b`, `timeoutMs`, `sessionId`, `configDiscovery`, `configFiles`, `\(code -3`, `jsonrpc`}
	for _, m := range slices.Concat(doc.Requests, doc.Notifications, doc.HostRequests) {
		if strings.Contains(m.Method, "/") {
			words = append(words, regexp.QuoteMeta(m.Method))
		}
	}
	return regexp.MustCompile(strings.Join(words, "|"))
}

// TestBinaryMessagesUseNoProtocolWords runs the real binary's commands
// into failures a person meets (a call past --timeout, a resource or
// prompt the server refuses, servers given with --command and --url that
// do not start or are mistyped) and checks that what it prints names
// flags, config keys and "the command line", never the host protocol's
// methods, params or error codes. Before, these said "did not answer
// within timeoutMs (1 s) (code -32014)", "resources/read: Resource not
// found (code -32602)" and "(server defined in initialize)".
func TestBinaryMessagesUseNoProtocolWords(t *testing.T) {
	isolate(t)
	bin := binary(t)
	example := bin + " example-server"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	words := protocolWords(t)
	for _, tc := range []struct {
		args []string
		want string // a part of what it prints
	}{
		{[]string{"call", "slow", "seconds=5", "--timeout", "1s", "--command", example}, `tool "slow" of server "mcp-sidecar" did not answer within 1s (--timeout)`},
		{[]string{"resources", "read", "example://nope", "--command", example}, `server "mcp-sidecar" could not read example://nope: Resource not found`},
		{[]string{"prompts", "get", "greet", "--command", example}, `server "mcp-sidecar" could not give prompt "greet"`},
		{[]string{"doctor", "--url", refused}, "(server defined in the command line)"},
		{[]string{"tools", "--url", refused}, "nothing is listening at " + refused},
		{[]string{"call", "ping", "--url", refused}, `no server that started has a tool "ping"; server "localhost`},
		{[]string{"resources", "templates", "--url", refused}, "nothing is listening"},
		{[]string{"doctor", "--command", example + " --bogus"}, "unknown flag: --bogus"},
		{[]string{"tools", "--url", "ftp://example.com/mcp"}, `the command line: server "example": key "url": must be an http:// or https:// URL`},
		{[]string{"call", "nope", "--command", example}, `no server has a tool "nope"`},
	} {
		out, _ := exec.Command(bin, tc.args...).CombinedOutput()
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: output lacks %q:\n%s", tc.args, tc.want, out)
		}
		if w := words.FindAllString(string(out), -1); len(w) > 0 {
			t.Errorf("%q: protocol words %q in what people read:\n%s", tc.args, w, out)
		}
	}
}
