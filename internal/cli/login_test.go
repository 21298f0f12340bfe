package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
)

// loginWorld is a person's machine: a config file naming a protected
// server, and a home of their own.
type loginWorld struct {
	t      *testing.T
	as     *oauthtest.AuthServer
	server *oauthtest.Server
	config string
	creds  string
	vars   map[string]string
	// browse is the browser: it approves at once.
	browse func(ctx context.Context, url string) error
}

func newLoginWorld(t *testing.T) *loginWorld {
	home := t.TempDir()
	w := &loginWorld{t: t}
	w.as = oauthtest.NewAuthServer(t, oauthtest.Config{})
	w.server = oauthtest.NewServer(t, w.as, oauthtest.ServerConfig{})
	w.config = filepath.Join(home, "config.toml")
	body := "[mcp_servers.remote]\nurl = \"" + w.server.URL() + "\"\n\n[mcp_servers.local]\ncommand = \"true\"\n"
	if err := os.WriteFile(w.config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	w.vars = map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"), "PATH": os.Getenv("PATH")}
	w.creds = filepath.Join(home, ".config", "mcp-sidecar", "credentials", "credentials.json")
	// A browser opener starts the browser and returns, as xdg-open does.
	var browsers sync.WaitGroup
	t.Cleanup(browsers.Wait)
	w.browse = func(_ context.Context, url string) error {
		browsers.Go(func() { oauthtest.Browse(t.Context(), url) })
		return nil
	}
	return w
}

// run runs a command and returns its exit status and output.
func (w *loginWorld) run(run func(context.Context, Env, []string) int, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	checker, err := schema.NewChecker()
	if err != nil {
		w.t.Fatal(err)
	}
	env := Env{
		Stdout: &out, Stderr: &errOut, Home: w.vars["HOME"], Cwd: w.vars["HOME"], Version: "test",
		LookupEnv: func(k string) (string, bool) {
			v, ok := w.vars[k]
			return v, ok
		},
		OpenBrowser: w.browse,
		Checker:     checker,
	}
	code := run(w.t.Context(), env, append(args, "--config", w.config))
	if err := checker.Err(); err != nil {
		w.t.Errorf("%v: messages that do not match the protocol schema:\n%v", args, err)
	}
	return code, out.String(), errOut.String()
}

// noTokens fails if any token the authorization server issued is in text.
func (w *loginWorld) noTokens(where, text string) {
	w.t.Helper()
	for _, tok := range w.as.Issued() {
		if strings.Contains(text, tok) {
			w.t.Errorf("%s shows a token", where)
		}
	}
}

func TestLoginDoctorLogout(t *testing.T) {
	w := newLoginWorld(t)
	code, out, errOut := w.run(Login, "remote")
	if code != exitOK || !strings.Contains(out, "Authorize remote by opening this URL in your browser:\n\n  "+w.as.URL()+"/authorize?") ||
		!strings.Contains(out, "remote is authorized (token expires") || strings.Contains(out, "No browser") {
		t.Fatalf("login: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	w.noTokens("login's output", out+errOut)
	if fi, err := os.Stat(w.creds); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v, %v", fi, err)
	}

	code, out, _ = w.run(Login, "remote")
	if code != exitOK || !strings.Contains(out, "remote is already authorized") || w.as.Counts().Authorizations != 1 {
		t.Errorf("second login: exit %d, %d authorizations:\n%s", code, w.as.Counts().Authorizations, out)
	}

	code, out, errOut = w.run(Doctor)
	if !strings.Contains(out, "OAuth:\n  remote: authorized (token expires") {
		t.Errorf("doctor (exit %d) does not show remote authorized:\n%s\n%s", code, out, errOut)
	}
	w.noTokens("doctor's output", out+errOut)
	code, out, _ = w.run(Doctor, "--json")
	if !strings.Contains(out, `"authorization": {`) || !strings.Contains(out, `"authorized": true`) {
		t.Errorf("doctor --json (exit %d) has no authorization:\n%s", code, out)
	}
	w.noTokens("doctor --json", out)

	code, out, _ = w.run(Logout, "remote")
	if code != exitOK || !strings.Contains(out, "remote: token removed") {
		t.Fatalf("logout: exit %d:\n%s", code, out)
	}
	data, _ := os.ReadFile(w.creds)
	w.noTokens("the credentials file after logout", string(data))

	// Logged out, doctor (a host that opens no browser) says what to do.
	w.browse = func(context.Context, string) error { return errors.New("unexpected browser") }
	code, out, _ = w.run(Doctor, "--strict")
	if code != exitFailure || !strings.Contains(out, "needs_authorization") || !strings.Contains(out, "remote: not authorized: run 'mcp-sidecar login remote --config "+w.config+"'") {
		t.Errorf("doctor after logout: exit %d:\n%s", code, out)
	}
}

func TestLoginWithoutABrowserPrintsTheURL(t *testing.T) {
	w := newLoginWorld(t)
	// No browser here: the person copies the printed URL into one
	// elsewhere (here, the test's own).
	var copied sync.WaitGroup
	defer copied.Wait()
	w.browse = func(ctx context.Context, url string) error {
		copied.Go(func() { oauthtest.Browse(t.Context(), url) })
		return errors.New("xdg-open is not available")
	}
	code, out, errOut := w.run(Login, "remote")
	if code != exitOK || !strings.Contains(out, "(No browser was opened: xdg-open is not available. Open the URL yourself.)") || !strings.Contains(out, "remote is authorized") {
		t.Errorf("login: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestLoginRefusesServersWithoutOAuth(t *testing.T) {
	w := newLoginWorld(t)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"local"}, `server "local" does not use OAuth: it is a stdio server`, exitFailure},
		{[]string{"nope"}, `no server "nope" in your config`, exitFailure},
		{nil, "name the SERVER", exitUsage},
	} {
		code, _, errOut := w.run(Login, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("login %q: exit %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

func TestLoginTimeoutNamesTheFlag(t *testing.T) {
	w := newLoginWorld(t)
	w.browse = func(context.Context, string) error { return nil } // opened; the person never comes back
	code, _, errOut := w.run(Login, "remote", "--timeout", "300ms")
	if code != exitFailure || !strings.Contains(errOut, "remote is not authorized: server \"remote\" failed to start: OAuth authorization failed: not completed within 300ms (--timeout)") {
		t.Errorf("login: exit %d, stderr:\n%s", code, errOut)
	}
}

// Every system's opener gets the authorization URL as one argument, & and
// all: on Windows no cmd.exe sees it (start would cut it at the first &).
func TestBrowserCommand(t *testing.T) {
	const u = "https://as.example/authorize?client_id=c&state=s&redirect_uri=http%3A%2F%2F127.0.0.1%3A4321%2Fcallback"
	for _, tc := range []struct {
		goos string
		want []string
	}{
		{"linux", []string{"xdg-open", u}},
		{"freebsd", []string{"xdg-open", u}},
		{"darwin", []string{"open", u}},
		{"windows", []string{"rundll32", "url.dll,FileProtocolHandler", u}},
	} {
		name, args := browserCommand(tc.goos, u)
		if diff := cmp.Diff(tc.want, append([]string{name}, args...)); diff != "" {
			t.Errorf("%s: command (-want +got):\n%s", tc.goos, diff)
		}
	}
}
