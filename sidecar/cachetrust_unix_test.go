//go:build unix

package sidecar_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Cache files and folders the sidecar did not make, seen from a host: a lazy
// session/open neither blocks on a FIFO nor keeps a server dormant on tools
// planted in a folder others may write; each refusal is reported once in
// mcp/log.

func TestDiskCacheFIFODoesNotBlockSessionOpen(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})}
	primeCache(t, cacheDir, servers, nil)
	path, _ := cacheEntryFile(t, cacheDir)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t)
	h.initialize(servers, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	// Opening the FIFO for reading would wait for a writer for ever; the
	// harness's call gives up after testTimeout.
	open := h.open(map[string]any{"sessionId": "L"})
	if st := open.Servers[0].State; st != protocol.StateStarting {
		t.Errorf("server s is %s, want starting: a FIFO is no cached catalog", st)
	}
	h.waitComplete("L", 0)
	logs := cacheLogs(h)
	if len(logs) != 1 || !strings.Contains(logs[0], "not a regular file") {
		t.Errorf("cache reports %q, want one saying the file is not a regular file", logs)
	}
}

func TestDiskCacheUntrustedFolderRefusedAndReportedOnce(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})}
	primeCache(t, cacheDir, servers, nil)
	// Someone made the folder writable by everyone and planted a tool in
	// the (valid, checksummed) entry... which nobody can tell from the
	// content; the folder's mode is what gives it away.
	if err := os.Chmod(cacheDir, 0o777); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t)
	h.initialize(servers, map[string]any{"cacheDir": cacheDir, "features": lazyFeature})
	for _, sid := range []string{"A", "B"} {
		open := h.open(map[string]any{"sessionId": sid})
		if st := open.Servers[0].State; st != protocol.StateStarting {
			t.Errorf("session %s: server s is %s, want starting: the cache folder is not trusted", sid, st)
		}
		h.waitComplete(sid, 0)
		for _, s := range h.toolsList(sid).Servers {
			if s.Catalog != protocol.CatalogLive {
				t.Errorf("session %s lists %s with catalog %q, want live", sid, s.Name, s.Catalog)
			}
		}
	}
	// Both sessions loaded (refused) and stored (refused): one report.
	logs := cacheLogs(h)
	if len(logs) != 1 || !strings.Contains(logs[0], "writable by group or others") || !strings.Contains(logs[0], cacheDir) {
		t.Errorf("cache reports %q, want exactly one naming %s and saying why", logs, cacheDir)
	}
	fi, err := os.Stat(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Errorf("the folder's mode became %o: refuse it, do not repair it", fi.Mode().Perm())
	}
}
