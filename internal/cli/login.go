package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/oauth"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// LoginDoc is login's help text.
const LoginDoc = `Usage: mcp-sidecar login SERVER [--config FILE]... [--trust-project] [--timeout DURATION] [--no-browser]
       mcp-sidecar login --url URL [--timeout DURATION] [--no-browser]

Authorizes mcp-sidecar to use a Streamable HTTP server that asks for OAuth
(GitHub, Linear, Notion, Atlassian, Sentry, ...), as a harness would have
it authorized: the sidecar discovers the server's authorization server,
registers (or uses the configured oauth.client_id), and this command prints
the authorization URL and opens it in your browser (xdg-open, open or rundll32 url.dll;
with --no-browser, or when none is available, open it yourself). The
browser comes back to http://127.0.0.1:PORT/callback, where the sidecar
listens (PORT from oauth.callback_port or mcp_oauth_callback_port, else a
free one), or to the oauth.callback_url or mcp_oauth_callback_url you set.

The token is kept in the credentials file every harness's sidecar reads
($XDG_CONFIG_HOME/mcp-sidecar/credentials/credentials.json, 0600), per
server URL, oauth_resource and scopes, and refreshed without you. A server
that is already authorized is left as it is: 'mcp-sidecar logout SERVER'
first to authorize again. 'mcp-sidecar doctor' shows which servers are
authorized and when their tokens expire, and gives the login command for
each server that needs authorization ('login --url URL' for one tried with
--url: the token is kept for its URL, so a server configured with the same
URL uses it too).

Exit status: 0 when the server is authorized, 1 when not (declined, timed
out, refused), 2 for a bad command line, 130 when interrupted.

Examples:
  mcp-sidecar login linear
  mcp-sidecar login --url https://mcp.linear.app/mcp
  mcp-sidecar login notion --no-browser    # on a machine without a browser
`

// LogoutDoc is logout's help text.
const LogoutDoc = `Usage: mcp-sidecar logout SERVER [--config FILE]... [--trust-project]
       mcp-sidecar logout --url URL

Forgets the OAuth token of a server: it is removed from the credentials
file, so every harness's sidecar asks for a new authorization the next time
the server needs one. The token is not revoked at the authorization server.

Examples:
  mcp-sidecar logout linear
`

// Login runs the login command.
func Login(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	fs.StringArrayVar(&src.config, "config", nil, "read config `FILE` instead of discovering your files (repeatable; later files win)")
	fs.StringVar(&src.url, "url", "", "authorize a server without a config: its `URL`")
	fs.BoolVar(&src.trustProject, "trust-project", false, "also find the servers of the project's own files that you have not approved in their tool")
	timeout := fs.Duration("timeout", oauth.DefaultTimeout, "how long to wait for the authorization in the browser, a `DURATION`")
	noBrowser := fs.Bool("no-browser", false, "only print the URL; do not open a browser")
	if code, done := parseFlags(&env, "login", fs, args, 0, 1); done {
		return code
	}
	l, name, code := loginTarget(env, "login", &src, fs.Args())
	if code >= 0 {
		return code
	}
	stderr := &lockedWriter{w: env.Stderr}
	var asked atomic.Bool
	present := func(ctx context.Context, p protocol.AuthorizeParams) (protocol.AuthorizeResult, error) {
		asked.Store(true)
		fmt.Fprintf(env.Stdout, "Authorize %s by opening this URL in your browser:\n\n  %s\n\n", p.Server, p.AuthorizationURL)
		if !*noBrowser {
			if err := openBrowser(ctx, env, p.AuthorizationURL); err != nil {
				fmt.Fprintf(env.Stdout, "(No browser was opened: %v. Open the URL yourself.)\n", err)
			}
		}
		fmt.Fprintf(env.Stdout, "Waiting for the browser to come back (at most %s)...\n", *timeout)
		return protocol.AuthorizeResult{}, nil
	}
	sess, err := openSession(ctx, env, l, sessionOptions{
		only: []string{name}, logOut: stderr, authorize: present, authorizationTimeout: *timeout,
	})
	if err != nil {
		return fail(ctx, stderr, "login", err)
	}
	defer sess.close(ctx)
	summary := sess.summary
	st, err := sess.status(ctx)
	if err != nil {
		return fail(ctx, stderr, "login", err)
	}
	var auth *protocol.ServerAuthorization
	for _, s := range st.Servers {
		if s.Name == name {
			auth = s.Authorization
		}
	}
	switch {
	case !slices.Contains(summary.Ready, name):
		// The sidecar names its own key for the bound; here it is a flag.
		why := strings.ReplaceAll(sess.run(name).err, "limits.authorizationTimeoutMs", "--timeout")
		fmt.Fprintf(env.Stderr, "mcp-sidecar login: %s is not authorized: %s\n", name, why)
		return exitFailure
	case auth == nil || !auth.Authorized:
		fmt.Fprintf(env.Stdout, "%s did not ask for authorization: it works without it.\n", name)
	case !asked.Load():
		fmt.Fprintf(env.Stdout, "%s is already authorized (%s). Run 'mcp-sidecar logout %s' first to authorize again.\n", name, describeToken(auth, time.Now()), name)
	default:
		fmt.Fprintf(env.Stdout, "%s is authorized (%s).\n", name, describeToken(auth, time.Now()))
	}
	return exitOK
}

// Logout runs the logout command.
func Logout(ctx context.Context, env Env, args []string) int {
	fs := newFlagSet()
	var src serverFlags
	fs.StringArrayVar(&src.config, "config", nil, "read config `FILE` instead of discovering your files (repeatable; later files win)")
	fs.StringVar(&src.url, "url", "", "a server without a config: its `URL`")
	fs.BoolVar(&src.trustProject, "trust-project", false, "also find the servers of the project's own files that you have not approved in their tool")
	if code, done := parseFlags(&env, "logout", fs, args, 0, 1); done {
		return code
	}
	l, name, code := loginTarget(env, "logout", &src, fs.Args())
	if code >= 0 {
		return code
	}
	// Only the credentials file is touched: no server is started.
	srv, _, _ := oauth.ServerFor(l.servers[name], env.lookup)
	dir, err := oauth.DefaultStoreDir(env.lookup)
	if err != nil {
		return fail(ctx, env.Stderr, "logout", err)
	}
	m := oauth.NewManager(oauth.Options{Store: &oauth.Store{Dir: dir}})
	defer m.Close()
	removed, err := m.Logout(srv)
	if err != nil {
		return fail(ctx, env.Stderr, "logout", err)
	}
	if removed {
		fmt.Fprintf(env.Stdout, "%s: token removed from %s.\n", name, dir)
	} else {
		fmt.Fprintf(env.Stdout, "%s: no token was stored.\n", name)
	}
	return exitOK
}

// loginTarget reads the configuration and finds the one Streamable HTTP
// server login or logout is about. code is -1 when it was found, else the
// exit status (the problem was printed).
func loginTarget(env Env, cmd string, src *serverFlags, pos []string) (*loaded, string, int) {
	if src.url != "" && len(pos) > 0 {
		return nil, "", usageError(env, cmd, errors.New("give SERVER or --url, not both"))
	}
	if src.url == "" && len(pos) == 0 {
		return nil, "", usageError(env, cmd, errors.New("name the SERVER (or give --url)"))
	}
	l, err := src.load(env)
	if err != nil {
		return nil, "", usageError(env, cmd, err)
	}
	name := ""
	if len(pos) > 0 {
		name = pos[0]
	} else if len(l.names) == 1 {
		name = l.names[0]
	}
	cfg := l.servers[name]
	switch {
	case cfg == nil && slices.Contains(l.names, name):
		fmt.Fprintf(env.Stderr, "mcp-sidecar %s: server %q has config errors:\n", cmd, name)
		for _, e := range l.invalid(name) {
			fmt.Fprintln(env.Stderr, "  "+e.Error())
		}
		return nil, "", exitFailure
	case cfg == nil:
		fmt.Fprintf(env.Stderr, "mcp-sidecar %s: no server %q in your config", cmd, name)
		if len(l.names) > 0 {
			fmt.Fprintf(env.Stderr, " (servers: %v)", l.names)
		}
		fmt.Fprintln(env.Stderr)
		return nil, "", exitFailure
	}
	if _, ok, _ := oauth.ServerFor(cfg, nil); !ok {
		why := "it is a stdio server: OAuth is for Streamable HTTP servers"
		if cfg.URL != "" {
			why = "its configuration gives its own Authorization (bearer_token_env_var, an Authorization header or a header helper)"
		}
		fmt.Fprintf(env.Stderr, "mcp-sidecar %s: server %q does not use OAuth: %s\n", cmd, name, why)
		return nil, "", exitFailure
	}
	return l, name, -1
}

// describeToken says when a token expires, for people.
func describeToken(a *protocol.ServerAuthorization, now time.Time) string {
	if a.ExpiresAt == "" {
		return "the token does not expire"
	}
	t, err := time.Parse(time.RFC3339, a.ExpiresAt)
	if err != nil {
		return "token expires " + a.ExpiresAt
	}
	left := t.Sub(now).Round(time.Minute)
	s := fmt.Sprintf("token expires %s, in %s", t.Local().Format("2006-01-02 15:04 MST"), hoursMinutes(left))
	if left <= 0 {
		s = fmt.Sprintf("token expired %s", t.Local().Format("2006-01-02 15:04 MST"))
	}
	if a.Refreshable {
		s += "; renewed without you"
	}
	return s
}

// hoursMinutes is d as "2h05m" or "59m".
func hoursMinutes(d time.Duration) string {
	h, m := int(d.Hours()), int(d.Minutes())%60
	if h == 0 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dh%02dm", h, m)
}

// openBrowser opens url in the user's browser: env.OpenBrowser when set,
// else the system's opener (browserCommand). It never waits for the browser.
func openBrowser(ctx context.Context, env Env, url string) error {
	if env.OpenBrowser != nil {
		return env.OpenBrowser(ctx, url)
	}
	name, args := browserCommand(runtime.GOOS, url)
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s is not available", name)
	}
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	// The opener hands the URL to the browser and exits; it is reaped in
	// the background so that no zombie is left.
	go cmd.Wait()
	return nil
}

// browserCommand is the program and arguments that open url on goos. On
// Windows it is url.dll's handler, not cmd's start: cmd.exe would split the
// URL at each & (every authorization URL has several) and run the rest as
// commands, and rundll32 takes its arguments as they are.
func browserCommand(goos, url string) (name string, args []string) {
	switch goos {
	case "darwin":
		return "open", []string{url}
	case "windows":
		return "rundll32", []string{"url.dll,FileProtocolHandler", url}
	}
	return "xdg-open", []string{url}
}
