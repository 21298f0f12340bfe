//go:build linux

package oauth

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretServiceEnv marks the test binary run inside a D-Bus session with
// a Secret Service of its own (TestOSKeyringSecretService).
const secretServiceEnv = "MCP_SIDECAR_TEST_SECRET_SERVICE"

// The system's keychain, for real: a Secret Service (gnome-keyring) on a
// private D-Bus session with a keyring of its own in a temporary folder,
// when this machine has dbus-run-session and gnome-keyring-daemon;
// skipped elsewhere. The test binary runs itself inside that session.
func TestOSKeyringSecretService(t *testing.T) {
	if os.Getenv(secretServiceEnv) != "1" {
		for _, tool := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("no %s here: the Secret Service is tested where it is installed", tool)
			}
		}
		home := t.TempDir()
		cmd := exec.CommandContext(t.Context(), "dbus-run-session", "--", "sh", "-c",
			`printf pw | gnome-keyring-daemon --unlock --replace --daemonize --components=secrets >/dev/null 2>&1 || exit 3
exec "$0" -test.run='^TestOSKeyringSecretService$' -test.count=1 -test.v`, os.Args[0])
		cmd.Env = append(os.Environ(), secretServiceEnv+"=1", "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_RUNTIME_DIR="+home)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestOSKeyringSecretService") {
			t.Fatalf("inside a D-Bus session: %v\n%s", err, out)
		}
		return
	}
	kr := OSKeyring{}
	const account = "mcp-sidecar-test|0123456789abcdef"
	if _, err := kr.Get(keyringService, account); err != ErrKeyringNotFound {
		t.Fatalf("Get of a missing entry: %v, want ErrKeyringNotFound", err)
	}
	// Through the Manager, as a server with "keyring" keeps its tokens.
	m := NewManager(Options{Store: &Store{Dir: filepath.Join(t.TempDir(), "credentials")}, Keyring: kr})
	defer m.Close()
	srv := Server{Name: "mcp-sidecar-test", URL: "https://example.test/mcp", CredentialsStore: StoreKeyring}
	c := &Credentials{ClientID: "cid", TokenURL: "https://as.example.test/token", AccessToken: "at-secret", RefreshToken: "rt-secret"}
	if err := m.keep(srv, c); err != nil {
		t.Fatal(err)
	}
	m.keyringCache = map[string]keyringEntry{} // read it from the keychain
	got, err := m.stored(srv, true)
	if err != nil || got == nil || got.AccessToken != "at-secret" || got.RefreshToken != "rt-secret" {
		t.Fatalf("stored = %+v, %v", got, err)
	}
	if removed, err := m.Logout(srv); err != nil || !removed {
		t.Fatalf("logout = %v, %v", removed, err)
	}
	if _, err := kr.Get(keyringService, keyringAccount(srv.Name, srv.URL)); err != ErrKeyringNotFound {
		t.Errorf("after logout: %v, want ErrKeyringNotFound", err)
	}
}
