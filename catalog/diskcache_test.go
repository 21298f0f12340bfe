package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"go.uber.org/goleak"
)

// Env of the helper process mode of the test binary (see TestMain).
const (
	helperEnv      = "CATALOG_TEST_HELPER"
	helperDirEnv   = "CATALOG_TEST_DIR"
	helperIDEnv    = "CATALOG_TEST_WRITER"
	helperCountEnv = "CATALOG_TEST_COUNT"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "store" {
		os.Exit(storeHelper())
	}
	// Shared listings are driven from many goroutines at once (leaders,
	// waiters, cancellations): none may outlive the tests.
	goleak.VerifyTestMain(m)
}

// storeHelper stores entries of writer id into one key, count times.
func storeHelper() int {
	c := &DiskCache{Dir: os.Getenv(helperDirEnv)}
	id, _ := strconv.Atoi(os.Getenv(helperIDEnv))
	n, _ := strconv.Atoi(os.Getenv(helperCountEnv))
	for i := range n {
		if err := c.Store(testKey, writerEntry(id, i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

var testKey = strings.Repeat("ab", 32)

// writerEntry is entry i of writer w: its tools are big enough (tens of KiB)
// that a torn write would be visible, and say who wrote them so a reader
// can check the entry is whole and consistent.
func writerEntry(w, i int) *CacheEntry {
	e := &CacheEntry{Server: "srv", ListedAt: time.Unix(int64(1000+i), 0).UTC()}
	pad := strings.Repeat("p", 1024)
	for j := range 40 {
		e.Tools = append(e.Tools, json.RawMessage(fmt.Sprintf(
			`{"name":"t%d","writer":%d,"seq":%d,"inputSchema":{"type":"object","description":"%s"}}`, j, w, i, pad)))
	}
	return e
}

// checkWriterEntry checks that e is one whole entry of one writer.
func checkWriterEntry(e *CacheEntry) error {
	if len(e.Tools) != 40 {
		return fmt.Errorf("%d tools, want 40", len(e.Tools))
	}
	var first struct{ Writer, Seq int }
	for j, raw := range e.Tools {
		var x struct {
			Name        string
			Writer, Seq int
		}
		if err := json.Unmarshal(raw, &x); err != nil {
			return err
		}
		if j == 0 {
			first.Writer, first.Seq = x.Writer, x.Seq
		}
		if x.Name != fmt.Sprintf("t%d", j) || x.Writer != first.Writer || x.Seq != first.Seq {
			return fmt.Errorf("tool %d is %+v, mixed with writer %d seq %d", j, x, first.Writer, first.Seq)
		}
	}
	if want := time.Unix(int64(1000+first.Seq), 0); !e.ListedAt.Equal(want) {
		return fmt.Errorf("listedAt %v, want %v", e.ListedAt, want)
	}
	return nil
}

func TestDiskCacheRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "cache")
	c := &DiskCache{Dir: dir}

	if e, err := c.Load(testKey); e != nil || err != nil {
		t.Fatalf("Load of a missing entry = %v, %v; want nil, nil", e, err)
	}

	tools := raws(
		`{"name":"a","inputSchema":{"z":1,"a":12345678901234567890,"x-kw":"<&>\u00e9"}}`,
		"{ \"name\" : \"b\",\n  \"inputSchema\" : {} }",
	)
	listed := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := c.Store(testKey, &CacheEntry{Server: "srv", ListedAt: listed, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	e, err := c.Load(testKey)
	if err != nil {
		t.Fatal(err)
	}
	got := struct {
		Version          int
		Server, ScopeKey string
		ListedAt         time.Time
		Tools            []string
	}{e.Version, e.Server, e.ScopeKey, e.ListedAt, rawStrings(e.Tools)}
	want := got
	want.Version, want.Server, want.ScopeKey, want.ListedAt, want.Tools = CacheVersion, "srv", testKey, listed, rawStrings(tools)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}

	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o700 {
		t.Errorf("dir mode %o, want 700", m)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("files in cache dir: %v, want exactly one", files)
	}
	fi, _ := files[0].Info()
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("file mode %o, want 600", m)
	}
	if !strings.Contains(files[0].Name(), fmt.Sprintf("v%d", CacheVersion)) {
		t.Errorf("file name %q does not carry the schema version", files[0].Name())
	}

	// An empty catalog round-trips as empty, not missing.
	if err := c.Store(testKey, &CacheEntry{Server: "srv"}); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Load(testKey); err != nil || e == nil || len(e.Tools) != 0 {
		t.Fatalf("empty entry: %+v, %v", e, err)
	}

	if err := c.Remove(testKey); err != nil {
		t.Fatal(err)
	}
	if e, err := c.Load(testKey); e != nil || err != nil {
		t.Fatalf("Load after Remove = %v, %v", e, err)
	}
	if err := c.Remove(testKey); err != nil {
		t.Errorf("Remove of a missing entry: %v", err)
	}
}

func TestDiskCacheNoSecrets(t *testing.T) {
	cfg := httpConfig()
	cfg.Env = map[string]string{"K": secretToken}
	key := ScopeKey("web", cfg, config.MapLookup(baseEnv()), json.RawMessage(`{"account":"a"}`), "/p")
	c := &DiskCache{Dir: t.TempDir()}
	if err := c.Store(key, &CacheEntry{Server: "web", Tools: raws(`{"name":"a","inputSchema":{}}`)}); err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir(c.Dir)
	if len(files) == 0 {
		t.Fatal("no cache file written")
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(c.Dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secretToken)) || strings.Contains(f.Name(), secretToken) {
			t.Errorf("%s contains the token", f.Name())
		}
	}
}

func TestDiskCacheUnusable(t *testing.T) {
	valid := func(t *testing.T, c *DiskCache) []byte {
		ttl := int64(60000)
		if err := c.Store(testKey, &CacheEntry{Server: "srv", Tools: raws(`{"name":"a","inputSchema":{"n":1}}`),
			Hints: CacheHints{TTLMs: &ttl, Scope: ScopePublic}, Era: "modern", ProtocolVersion: "2026-07-28", Instructions: "Say please."}); err != nil {
			t.Fatal(err)
		}
		p, _ := c.path(testKey)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		mutate  func(b []byte) []byte
		max     int64
		wantErr string
	}{
		{"garbage", func([]byte) []byte { return []byte("\x00\x01not json") }, 0, "not a cache entry"},
		{"empty file", func([]byte) []byte { return nil }, 0, "truncated"},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, 0, "truncated"},
		{"other version", func(b []byte) []byte {
			return bytes.Replace(b, fmt.Appendf(nil, `"version":%d`, CacheVersion), []byte(`"version":1`), 1)
		}, 0, "version 1"},
		{"no version", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"version":`), []byte(`"versio":`), 1)
		}, 0, "no version"},
		{"other scope", func(b []byte) []byte {
			return bytes.Replace(b, []byte(testKey), []byte(strings.Repeat("cd", 32)), 1)
		}, 0, "entry of scope"},
		{"tool changed but still JSON", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{"n":1}`), []byte(`{"n":2}`), 1)
		}, 0, "checksum"},
		// What the entry says of the server besides its tools reaches a
		// session too (the model reads the instructions; the TTL decides
		// whether to list again): damage there is damage.
		{"instructions changed", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"Say please."`), []byte(`"Say thanks."`), 1)
		}, 0, "checksum"},
		{"ttl changed", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"ttlMs":60000`), []byte(`"ttlMs":86400000`), 1)
		}, 0, "checksum"},
		{"era changed", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"era":"modern"`), []byte(`"era":"legacy"`), 1)
		}, 0, "checksum"},
		{"ttl removed", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"ttlMs":60000,`), nil, 1)
		}, 0, "checksum"},
		{"trailing data", func(b []byte) []byte { return append(b, "{}"...) }, 0, "data after"},
		{"not an object", func([]byte) []byte { return []byte(`[1,2]`) }, 0, "not a cache entry"},
		{"oversized", func(b []byte) []byte { return b }, 64, "larger than 64 bytes"},
	}
	t.Run("writable by others", func(t *testing.T) {
		c := &DiskCache{Dir: t.TempDir()}
		valid(t, c)
		p, _ := c.path(testKey)
		if err := os.Chmod(p, 0o622); err != nil {
			t.Fatal(err)
		}
		if e, err := c.Load(testKey); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "writable by group or others") {
			t.Fatalf("Load = %v, %v; want an ErrUntrusted about the mode", e, err)
		}
		valid(t, c) // Store replaces it with a 0600 file
		if e, err := c.Load(testKey); err != nil || e == nil {
			t.Fatalf("after replacing: %v, %v", e, err)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &DiskCache{Dir: t.TempDir()}
			b := valid(t, c)
			p, _ := c.path(testKey)
			if err := os.WriteFile(p, tt.mutate(bytes.Clone(b)), 0o600); err != nil {
				t.Fatal(err)
			}
			c.MaxBytes = tt.max
			e, err := c.Load(testKey)
			if !errors.Is(err, ErrCorrupt) || e != nil {
				t.Fatalf("Load = %v, %v; want an ErrCorrupt", e, err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want one naming %s and containing %q", err, p, tt.wantErr)
			}
			// Replace: a Store makes the entry usable again.
			c.MaxBytes = 0
			valid(t, c)
			if e, err := c.Load(testKey); err != nil || e == nil {
				t.Errorf("after replacing: %v, %v", e, err)
			}
		})
	}
}

func TestDiskCacheEveryTruncation(t *testing.T) {
	c := &DiskCache{Dir: t.TempDir()}
	if err := c.Store(testKey, writerEntry(0, 0)); err != nil {
		t.Fatal(err)
	}
	p, _ := c.path(testKey)
	whole, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Every proper prefix, except the one that only drops the final
	// newline, must be refused.
	for n := 0; n < len(whole)-1; n += 97 {
		if _, err := decodeEntry(whole[:n], testKey); err == nil {
			t.Fatalf("prefix of %d/%d bytes accepted", n, len(whole))
		}
	}
}

func TestDiskCacheStoreErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	entry := &CacheEntry{Server: "srv", Tools: raws(`{"name":"a","inputSchema":{}}`)}
	tests := []struct {
		name    string
		c       *DiskCache
		key     string
		e       *CacheEntry
		wantErr string
	}{
		{"dir under a file", &DiskCache{Dir: filepath.Join(file, "sub")}, testKey, entry, "create directory"},
		{"no dir", &DiskCache{}, testKey, entry, "no directory"},
		{"bad key", &DiskCache{Dir: t.TempDir()}, "../../etc/x", entry, "invalid key"},
		{"upper-case key", &DiskCache{Dir: t.TempDir()}, "ABCD", entry, "invalid key"},
		{"no server", &DiskCache{Dir: t.TempDir()}, testKey, &CacheEntry{}, "without server"},
		{"foreign scope key", &DiskCache{Dir: t.TempDir()}, testKey, &CacheEntry{Server: "s", ScopeKey: "00"}, "entry of scope"},
		{"invalid tool", &DiskCache{Dir: t.TempDir()}, testKey, &CacheEntry{Server: "s", Tools: raws(`{"a":`)}, "not a JSON object"},
		{"too large", &DiskCache{Dir: t.TempDir(), MaxBytes: 10}, testKey, entry, "exceeds the 10-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Store(tt.key, tt.e)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Store: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}

	t.Run("unwritable dir even for root", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("uses /proc")
		}
		// Root owns /proc: for root it is trusted but unwritable, for
		// anyone else another user's folder.
		err := (&DiskCache{Dir: "/proc"}).Store(testKey, entry)
		if os.Geteuid() != 0 {
			if !errors.Is(err, ErrUntrusted) {
				t.Fatalf("Store: %v, want ErrUntrusted (root's folder)", err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), "cannot write in /proc") {
			t.Fatalf("Store: %v, want one saying it cannot write in /proc", err)
		}
	})

	t.Run("unwritable dir", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root can write to a 0500 directory")
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		err := (&DiskCache{Dir: dir}).Store(testKey, entry)
		if err == nil || !strings.Contains(err.Error(), "cannot write in "+dir) {
			t.Fatalf("Store: %v, want one saying it cannot write in %s", err, dir)
		}
	})
}

func TestDefaultCacheDir(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    string
		wantErr bool
	}{
		{map[string]string{"XDG_CACHE_HOME": "/x/cache", "HOME": "/home/u"}, "/x/cache/mcp-sidecar", false},
		{map[string]string{"XDG_CACHE_HOME": "rel", "HOME": "/home/u"}, "/home/u/.cache/mcp-sidecar", false},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.cache/mcp-sidecar", false},
		{map[string]string{}, "", true},
	}
	for _, tt := range tests {
		got, err := DefaultCacheDir(config.MapLookup(tt.env))
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("DefaultCacheDir(%v) = %q, %v; want %q, error %v", tt.env, got, err, tt.want, tt.wantErr)
		}
	}
}

// readUntil loads the entry until done is closed, checking each load is a
// whole entry of one writer; it returns how many entries it saw.
func readUntil(t *testing.T, c *DiskCache, done <-chan struct{}) int {
	t.Helper()
	seen := 0
	for {
		select {
		case <-done:
			return seen
		default:
		}
		e, err := c.Load(testKey)
		if err != nil {
			t.Errorf("Load during concurrent stores: %v", err)
			return seen
		}
		if e != nil {
			seen++
			if err := checkWriterEntry(e); err != nil {
				t.Errorf("torn entry: %v", err)
				return seen
			}
		}
	}
}

func checkNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasPrefix(f.Name(), ".tmp-") {
			t.Errorf("temp file left behind: %s", f.Name())
		}
	}
}

func TestDiskCacheConcurrentStores(t *testing.T) {
	c := &DiskCache{Dir: t.TempDir()}
	const writers, rounds = 8, 15
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range rounds {
				if err := c.Store(testKey, writerEntry(w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() { readUntil(t, c, done) })
	}
	wg.Wait()
	close(done)
	readers.Wait()

	e, err := c.Load(testKey)
	if err != nil || e == nil {
		t.Fatalf("final Load: %v, %v", e, err)
	}
	if err := checkWriterEntry(e); err != nil {
		t.Error(err)
	}
	checkNoTempFiles(t, c.Dir)
}

func TestDiskCacheConcurrentProcesses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &DiskCache{Dir: t.TempDir()}
	const procs, rounds = 2, 40
	errs := make(chan error, procs)
	var out [procs]bytes.Buffer
	for w := range procs {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(),
			helperEnv+"=store",
			helperDirEnv+"="+c.Dir,
			helperIDEnv+"="+strconv.Itoa(w+100),
			helperCountEnv+"="+strconv.Itoa(rounds),
		)
		cmd.Stdout, cmd.Stderr = &out[w], &out[w]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { errs <- cmd.Wait() }()
	}
	done := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		readUntil(t, c, done)
	}()
	for w := range procs {
		if err := <-errs; err != nil {
			t.Errorf("writer process: %v\n%s", err, out[w].String())
		}
	}
	close(done)
	<-readerDone

	e, err := c.Load(testKey)
	if err != nil || e == nil {
		t.Fatalf("final Load: %v, %v", e, err)
	}
	if err := checkWriterEntry(e); err != nil {
		t.Error(err)
	}
	checkNoTempFiles(t, c.Dir)
}
