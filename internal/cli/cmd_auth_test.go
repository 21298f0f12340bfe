package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
)

// browserEnv is the environment variable that makes the test binary act
// as a browser (TestMain): it follows the authorization URL it is given,
// approves, and comes back to the redirect, as a person in a browser does.
const browserEnv = "MCP_SIDECAR_TEST_BROWSER"

// fakeBrowser runs as xdg-open when browserEnv is set.
func fakeBrowser() {
	if os.Getenv(browserEnv) == "" || len(os.Args) < 2 {
		return
	}
	if _, _, err := oauthtest.Browse(context.Background(), os.Args[1]); err != nil {
		os.Stderr.WriteString("fake browser: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// browserPath is a PATH whose xdg-open (and open, on macOS) is the test
// binary acting as a browser, ahead of the real PATH.
func browserPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"xdg-open", "open"} {
		if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestBinaryServerThatNeedsAuthorization: a server that asks for OAuth and
// was never authorized. call says so and how to log in (not that the
// server has no such tool), tools exits 1 with the same advice, and the
// command doctor's hint names is one login accepts: with the --config
// given, and for a server given with --url, 'login --url URL', which then
// authorizes it (the browser approves) so that the call works.
func TestBinaryServerThatNeedsAuthorization(t *testing.T) {
	isolate(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // the credentials file
	as := oauthtest.NewAuthServer(t, oauthtest.Config{})
	srv := oauthtest.NewServer(t, as, oauthtest.ServerConfig{})
	cfg := filepath.Join(t.TempDir(), "config.toml")
	writeFile(t, cfg, "[mcp_servers.remote]\nurl = \""+srv.URL()+"\"\n", 0o600)
	hint := "run 'mcp-sidecar login remote --config " + cfg + "'"
	urlHint := "run 'mcp-sidecar login --url " + srv.URL() + "'"

	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"call", "remote", "echo", "text=hi", "--config", cfg}, 1, "",
			`mcp-sidecar call: server "remote" needs authorization: ` + hint},
		{[]string{"call", "echo", "text=hi", "--config", cfg}, 1, "",
			`mcp-sidecar call: no server that started has a tool "echo"; server "remote" needs authorization: ` + hint},
		{[]string{"tools", "--config", cfg}, 1, "remote (http, needs_authorization, catalog none, 0 tools; disk cache: miss)\n  needs authorization: " + hint + "\n", ""},
		{[]string{"doctor", "--config", cfg}, 0, "remote: not authorized: " + hint, ""},
		{[]string{"resources", "--config", cfg}, 1, "", `mcp-sidecar resources: server "remote" needs authorization: ` + hint},
		{[]string{"doctor", "--url", srv.URL()}, 0, "not authorized: " + urlHint, ""},
		{[]string{"call", "echo", "text=hi", "--url", srv.URL()}, 1, "", "needs authorization: " + urlHint},
	} {
		r := runBin(t, nil, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: want exit %d, %q on stdout and %q on stderr:\n%s", tc.args, tc.code, tc.stdout, tc.stderr, r)
		}
		if strings.Contains(r.stdout+r.stderr, "has no tool") {
			t.Errorf("%q: says the server has no tool:\n%s", tc.args, r)
		}
	}

	// The hint's command works: the browser approves, the call goes through.
	env := append(os.Environ(), "PATH="+browserPath(t), browserEnv+"=1")
	r := runBin(t, env, "login", "--url", srv.URL())
	if r.code != 0 || !strings.Contains(r.stdout, "is authorized (token expires") {
		t.Fatalf("login --url: %s", r)
	}
	for _, args := range [][]string{
		{"call", "echo", "text=hi", "--url", srv.URL()},
		{"call", "remote", "echo", "text=hi", "--config", cfg}, // the token is kept per URL
	} {
		if r := runBin(t, nil, args...); r.code != 0 || !strings.HasPrefix(r.stdout, "hi\n") {
			t.Errorf("%q after login: %s", args, r)
		}
	}
	if r := runBin(t, nil, "tools", "--config", cfg); r.code != 0 {
		t.Errorf("tools after login: %s", r)
	}
}
