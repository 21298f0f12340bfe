//go:build unix

package launcherprobe

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMonitorCurrent is the per-call cost of re-reading a verified
// launcher's identity: a candidate that is a symlink to a file two
// directories down, as an npm install leaves it.
func BenchmarkMonitorCurrent(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "lib", "node_modules", "codex", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		b.Fatal(err)
	}
	target := filepath.Join(bin, "codex")
	if err := os.WriteFile(target, []byte("#!/bin/sh\n"+goodBody()+"\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	link := filepath.Join(dir, "codex")
	if err := os.Symlink(target, link); err != nil {
		b.Fatal(err)
	}
	m := testProber().Monitor(context.Background(), link, nil)
	defer m.Close()
	if r := m.Verify(context.Background()); !r.Verified() {
		b.Fatal(r)
	}
	for b.Loop() {
		if !m.Current().Verified() {
			b.Fatal("not verified")
		}
	}
}
