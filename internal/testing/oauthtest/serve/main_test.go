package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
)

// TestServe: the first line names a protected MCP endpoint (a request
// without a token gets 401 with the RFC 9728 metadata) and its issuer; the
// end of stdin stops the servers, and the second line has what they saw.
func TestServe(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(stdinR, stdoutW)
		stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	if !lines.Scan() {
		t.Fatalf("no first line: %v", lines.Err())
	}
	var addr struct{ URL, Issuer string }
	if err := json.Unmarshal(lines.Bytes(), &addr); err != nil {
		t.Fatalf("first line %q: %v", lines.Text(), err)
	}
	if !strings.HasPrefix(addr.URL, "http://127.0.0.1:") || !strings.HasSuffix(addr.URL, "/mcp") || !strings.HasPrefix(addr.Issuer, "http://127.0.0.1:") {
		t.Fatalf("first line %q: want loopback URLs", lines.Text())
	}
	resp, err := http.Post(addr.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("request without a token: %s, WWW-Authenticate %q; want 401 naming the resource metadata", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	resp, err = http.Get(addr.Issuer + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("authorization server metadata: %s", resp.Status)
	}

	stdinW.Close()
	if !lines.Scan() {
		t.Fatalf("no second line: %v", lines.Err())
	}
	type seen struct {
		Counts   oauthtest.Counts
		Accepted int
		Denied   int
	}
	var got seen
	if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
		t.Fatalf("second line %q: %v", lines.Text(), err)
	}
	want := seen{Denied: 1} // the POST without a token
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second line (-want +got):\n%s", diff)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
	if resp, err := http.Get(addr.URL); err == nil {
		resp.Body.Close()
		t.Error("the MCP server still answers after stdin ended")
	}
}
