//go:build unix

package sidecar

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// newTestConn is one server of a session of a sidecar whose whole
// environment is environ, enough for what a connection is given.
func newTestConn(t *testing.T, cfg *config.ServerConfig, environ []string) *serverConn {
	t.Helper()
	srv := newServer(context.Background(), Options{
		Env:     config.MapLookup(nil),
		Environ: func() []string { return environ },
	})
	t.Cleanup(srv.cancel)
	env := &environment{servers: map[string]*config.ServerConfig{cfg.Name: cfg}}
	sess := &Session{id: "s1", srv: srv, env: env}
	return &serverConn{sess: sess, name: cfg.Name, cfg: cfg}
}

// A connection's header helper runs for its first request, again only
// when the server answered 401 (refresh), in its file's folder with the
// sidecar's whole environment and the server's name and URL; what it gave
// is a secret of the server from then on.
func TestDynamicHeaders(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	script := `n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
printf '{"Authorization":"Bearer tok-%s-%s","X-Server":"%s %s"}' "$n" "$MARK" "$CLAUDE_CODE_MCP_SERVER_NAME" "$CLAUDE_CODE_MCP_SERVER_URL"`
	if err := os.WriteFile(filepath.Join(dir, "helper.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := &config.ServerConfig{Name: "api", URL: "https://api.example.com/mcp", HTTPHeadersHelper: "sh helper.sh", Dir: dir}
	sc := newTestConn(t, cfg, []string{"PATH=" + os.Getenv("PATH"), "MARK=whole9f3e2d", "CLAUDE_CODE_MCP_SERVER_NAME=stale"})
	get := sc.dynamicHeaders(cfg)
	ctx := context.Background()

	h, err := get(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Get("Authorization"), "Bearer tok-1-whole9f3e2d"; got != want {
		t.Errorf("first: Authorization %q, want %q", got, want)
	}
	if got, want := h.Get("X-Server"), "api https://api.example.com/mcp"; got != want {
		t.Errorf("X-Server %q, want %q", got, want)
	}
	if h, _ = get(ctx, false); h.Get("Authorization") != "Bearer tok-1-whole9f3e2d" {
		t.Errorf("second call without refresh ran the helper again: %q", h.Get("Authorization"))
	}
	if h, _ = get(ctx, true); h.Get("Authorization") != "Bearer tok-2-whole9f3e2d" {
		t.Errorf("refresh: %q, want the helper's second token", h.Get("Authorization"))
	}
	data, _ := os.ReadFile(count)
	if strings.TrimSpace(string(data)) != "2" {
		t.Errorf("the helper ran %s times, want 2", data)
	}
	// Both tokens, old and new, are the server's secrets.
	said := sc.sess.srv.serverSecrets(sc.sess.env, "api").String("sent tok-1-whole9f3e2d, then Bearer tok-2-whole9f3e2d")
	if strings.Contains(said, "tok-") {
		t.Errorf("scrubbed: %q", said)
	}

	// A helper that fails fails the request, naming the server, and
	// never quoting what it wrote.
	if err := os.WriteFile(filepath.Join(dir, "bad.sh"), []byte("echo + token=s3cr3t-7a6b >&2; exit 2"), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := &config.ServerConfig{Name: "bad", URL: "https://b/mcp", HTTPHeadersHelper: "sh bad.sh", Dir: dir}
	_, err = newTestConn(t, bad, []string{"PATH=" + os.Getenv("PATH")}).dynamicHeaders(bad)(ctx, false)
	if err == nil || !strings.HasPrefix(err.Error(), `header helper "sh bad.sh" exited with exit status 2`) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v", err)
	}
}

// A stdio server of a Claude Code, Cursor or VS Code file starts from the
// whole environment; one of Codex's, and an HTTP server, do not carry it.
func TestConnConfigEnviron(t *testing.T) {
	environ := []string{"PATH=/bin", "WHOLE=1"}
	for _, tc := range []struct {
		cfg  *config.ServerConfig
		want []string
	}{
		{&config.ServerConfig{Name: "claude", Command: "x", InheritEnv: true}, environ},
		{&config.ServerConfig{Name: "codex", Command: "x"}, nil},
		{&config.ServerConfig{Name: "web", URL: "https://h", InheritEnv: true}, nil},
	} {
		sc := newTestConn(t, tc.cfg, environ)
		got := sc.connConfig()
		if !slices.Equal(got.Environ, tc.want) {
			t.Errorf("%s: Environ %v, want %v", tc.cfg.Name, got.Environ, tc.want)
		}
		if tc.cfg.Environ != nil {
			t.Errorf("%s: the shared configuration was changed", tc.cfg.Name)
		}
	}
}
