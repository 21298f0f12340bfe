package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// Tests of one tools/list per discovery scope and of the on-disk catalog
// (docs/protocol.md, "Sessions, startup and the discovery scope" and "Disk
// cache and lazy startup").
//
// Overlap is made real, not hoped for: every fixture listing blocks until
// the test creates a gate file, and the test opens the gate only when all
// the startups it wants to overlap are parked in the shared listing.

// waitFileLines waits until the fixture file path has at least n lines and
// returns them. Fixture processes append one line per event (O_APPEND), so
// this waits for events of other processes.
func waitFileLines(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		lines := fixture.ReadLines(path)
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d lines in %s; have %q", n, filepath.Base(path), lines)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newSharingHarness is a harness that reports each time a startup begins
// to wait for another startup's shared listing (catalog.SharedListings'
// OnWait): a startup counted there joined a listing in flight.
func newSharingHarness(t *testing.T) (*harness, signals) {
	t.Helper()
	joins := newSignals()
	return newHookedHarness(t, sidecar.Hooks{SharedListingWait: func(string) { joins.fire() }}), joins
}

// waitJoined waits for n more startups to join shared listings, then
// checks that countFile holds at most maxLists listings: startups that
// should share are not listing on their own.
func waitJoined(t *testing.T, joins signals, n int, countFile string, maxLists int) {
	t.Helper()
	joins.wait(t, n, "startups joining the shared listing")
	if lines := fixture.ReadLines(countFile); len(lines) > maxLists {
		t.Fatalf("%d tools/list sent, want at most %d: %q", len(lines), maxLists, lines)
	}
}

func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// linePIDs returns the pid field ("<event> <pid> ...") of fixture lines.
func linePIDs(t *testing.T, lines []string) []string {
	t.Helper()
	var pids []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Fatalf("fixture line %q has no pid", l)
		}
		pids = append(pids, f[1])
	}
	return pids
}

func distinct(s []string) int {
	s = slices.Clone(s)
	slices.Sort(s)
	return len(slices.Compact(s))
}

// openAll sends the session/open requests concurrently, as a host whose
// threads start together does, and fails the test if any is refused.
func openAll(t *testing.T, h *harness, params []map[string]any) {
	t.Helper()
	errs := make([]error, len(params))
	var wg sync.WaitGroup
	for i, p := range params {
		wg.Go(func() {
			var res protocol.SessionOpenResult
			errs[i] = h.call(protocol.MethodSessionOpen, p, &res)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("session/open: %v", err)
	}
}

// wantReady checks that round 0 of session made server ready and that the
// session lists want (raw names) from a live catalog.
func wantReady(t *testing.T, h *harness, session, server string, want []string) {
	t.Helper()
	sum := h.waitComplete(session, 0)
	if diff := cmp.Diff([]string{server}, sum.Ready); diff != "" {
		t.Errorf("session %s round 0 ready (-want +got):\n%s\nsummary %+v", session, diff, sum)
	}
	list := h.toolsList(session)
	var got []string
	for _, tl := range list.Tools {
		if tl.Server == server {
			got = append(got, tl.Tool)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session %s tools of %s (-want +got):\n%s", session, server, diff)
	}
	for _, s := range list.Servers {
		if s.Name == server && (s.State != protocol.StateReady || s.Catalog != protocol.CatalogLive) {
			t.Errorf("session %s: %s is %s with catalog %q, want ready and live", session, server, s.State, s.Catalog)
		}
	}
}

// gatedSpec is a fixture whose every tools/list is counted in dir/count and
// blocks until dir/gate exists.
func gatedSpec(dir string) fixture.Spec {
	return fixture.Spec{
		Tools:              []fixture.ToolSpec{tool("echo", "echo"), tool("second", "echo")},
		BlockListUntilFile: filepath.Join(dir, "gate"),
		CountFile:          filepath.Join(dir, "count"),
		InitCountFile:      filepath.Join(dir, "init"),
	}
}

var gatedTools = []string{"echo", "second"}

// TestSharedListingOneScopeOneListing: eight sessions of one discovery
// scope start at once; each gets its own process and initialize, and the
// eight share one tools/list.
func TestSharedListingOneScopeOneListing(t *testing.T) {
	dir := t.TempDir()
	spec := gatedSpec(dir)
	h, joins := newSharingHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)

	// The same scope, written differently: a scope is compared as JSON.
	scopes := []string{`{"account":"acme","workspace":"/w"}`, "{ \"workspace\": \"/w\",\n \"account\": \"acme\" }"}
	const n = 8
	var params []map[string]any
	for i := range n {
		params = append(params, map[string]any{
			"sessionId": fmt.Sprintf("t%d", i), "startup": "eager", "cwd": dir,
			"scope": json.RawMessage(scopes[i%2]),
		})
	}
	openAll(t, h, params)
	inits := waitFileLines(t, spec.InitCountFile, n)
	waitJoined(t, joins, n-1, spec.CountFile, 1) // one leads, the others wait for it
	openGate(t, spec.BlockListUntilFile)

	for i := range n {
		wantReady(t, h, fmt.Sprintf("t%d", i), "s", gatedTools)
	}
	if lines := fixture.ReadLines(spec.CountFile); len(lines) != 1 {
		t.Errorf("%d sessions of one scope sent %d tools/list, want 1: %q", n, len(lines), lines)
	}
	// Each session keeps its own connection: its own process, its own
	// initialize.
	if got := distinct(linePIDs(t, inits)); len(inits) != n || got != n {
		t.Errorf("initialize lines %q: want %d, from %d processes", inits, n, n)
	}
	var pids []string
	for i := range n {
		var st protocol.ServersStatusResult
		if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": fmt.Sprintf("t%d", i)}, &st); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, fmt.Sprint(st.Servers[0].PID))
	}
	if diff := cmp.Diff(sortedCopy(linePIDs(t, inits)), sortedCopy(pids)); diff != "" {
		t.Errorf("session pids vs initialized processes (-init +status):\n%s", diff)
	}

	// An explicit refresh always fetches from the server.
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": "t3", "server": "s"}, nil); err != nil {
		t.Fatal(err)
	}
	if lines := fixture.ReadLines(spec.CountFile); len(lines) != 2 {
		t.Errorf("after servers/refresh: %d tools/list, want 2: %q", len(lines), lines)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestSharedListingEightScopes: sessions that differ in scope or in the
// fallback cwd never share a listing.
func TestSharedListingEightScopes(t *testing.T) {
	dir := t.TempDir()
	spec := gatedSpec(dir)
	cwdA, cwdB := t.TempDir(), t.TempDir()
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)

	variants := []map[string]any{
		{},
		{"scope": map[string]any{"account": "a"}},
		{"scope": map[string]any{"account": "b"}},
		{"scope": map[string]any{"account": "a", "workspace": "w"}},
		{"scope": map[string]any{"auth": "a"}},
		{"cwd": cwdA},
		{"cwd": cwdB},
		{"scope": map[string]any{"account": "a"}, "cwd": cwdA},
	}
	var params []map[string]any
	for i, v := range variants {
		p := map[string]any{"sessionId": fmt.Sprintf("v%d", i), "startup": "eager"}
		for k, x := range v {
			p[k] = x
		}
		params = append(params, p)
	}
	openAll(t, h, params)
	// Every scope lists on its own: all eight listings are in flight while
	// the gate is closed.
	lines := waitFileLines(t, spec.CountFile, len(variants))
	if got := distinct(linePIDs(t, lines)); got != len(variants) {
		t.Errorf("listings %q come from %d processes, want %d", lines, got, len(variants))
	}
	openGate(t, spec.BlockListUntilFile)
	for i := range variants {
		wantReady(t, h, fmt.Sprintf("v%d", i), "s", gatedTools)
	}
	if lines := fixture.ReadLines(spec.CountFile); len(lines) != len(variants) {
		t.Errorf("%d scopes sent %d tools/list, want %d: %q", len(variants), len(lines), len(variants), lines)
	}
}

// TestSharedListingLeaderSessionClosed: the session whose startup leads the
// shared listing closes mid-listing; a waiter lists over its own
// connection, shared again with the others, and all of them succeed.
func TestSharedListingLeaderSessionClosed(t *testing.T) {
	dir := t.TempDir()
	spec := gatedSpec(dir)
	h, joins := newSharingHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)

	h.open(map[string]any{"sessionId": "leader", "startup": "eager"})
	first := waitFileLines(t, spec.CountFile, 1)
	waiters := []string{"w1", "w2", "w3"}
	var params []map[string]any
	for _, id := range waiters {
		params = append(params, map[string]any{"sessionId": id, "startup": "eager"})
	}
	openAll(t, h, params)
	waitFileLines(t, spec.InitCountFile, 1+len(waiters))
	waitJoined(t, joins, len(waiters), spec.CountFile, 1)

	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": "leader"}, nil); err != nil {
		t.Fatal(err)
	}
	sum := h.waitComplete("leader", 0)
	if diff := cmp.Diff([]string{"s"}, sum.Cancelled); diff != "" {
		t.Errorf("closed leader's round 0 cancelled (-want +got):\n%s", diff)
	}
	second := waitFileLines(t, spec.CountFile, 2)
	if linePIDs(t, second)[1] == linePIDs(t, first)[0] {
		t.Errorf("the relisting %q came from the closed leader's process", second[1])
	}
	// One waiter leads the relisting, the others join it.
	waitJoined(t, joins, len(waiters)-1, spec.CountFile, 2)
	openGate(t, spec.BlockListUntilFile)
	for _, id := range waiters {
		wantReady(t, h, id, "s", gatedTools)
	}
	if lines := fixture.ReadLines(spec.CountFile); len(lines) != 2 {
		t.Errorf("tools/list sent %d times, want 2 (the cancelled one and one shared relisting): %q", len(lines), lines)
	}
}

// TestSharedListingFailureWaitersRecover: the shared listing fails (its
// server dies mid-listing); the waiters list again, once, and succeed.
func TestSharedListingFailureWaitersRecover(t *testing.T) {
	dir := t.TempDir()
	spec := gatedSpec(dir)
	h, joins := newSharingHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, nil)

	h.open(map[string]any{"sessionId": "leader", "startup": "eager"})
	first := waitFileLines(t, spec.CountFile, 1)
	waiters := []string{"w1", "w2", "w3"}
	var params []map[string]any
	for _, id := range waiters {
		params = append(params, map[string]any{"sessionId": id, "startup": "eager"})
	}
	openAll(t, h, params)
	waitFileLines(t, spec.InitCountFile, 1+len(waiters))
	waitJoined(t, joins, len(waiters), spec.CountFile, 1)

	var leaderPID int
	if _, err := fmtSscan(linePIDs(t, first)[0], &leaderPID); err != nil {
		t.Fatal(err)
	}
	if err := killPID(leaderPID); err != nil {
		t.Fatalf("killing the leader's server %d: %v", leaderPID, err)
	}
	sum := h.waitComplete("leader", 0)
	if len(sum.Failed) != 1 || sum.Failed[0].Server != "s" {
		t.Errorf("leader's round 0 = %+v: its server died, want s failed", sum)
	}
	second := waitFileLines(t, spec.CountFile, 2)
	if linePIDs(t, second)[1] == linePIDs(t, first)[0] {
		t.Errorf("the relisting %q came from the dead process", second[1])
	}
	// One waiter leads the relisting, the others join it.
	waitJoined(t, joins, len(waiters)-1, spec.CountFile, 2)
	openGate(t, spec.BlockListUntilFile)
	for _, id := range waiters {
		wantReady(t, h, id, "s", gatedTools)
	}
	if lines := fixture.ReadLines(spec.CountFile); len(lines) != 2 {
		t.Errorf("tools/list sent %d times, want 2 (the failed one and one shared relisting): %q", len(lines), lines)
	}
}

// TestSharedListingWaitCountsAgainstOwnTimeout: time spent waiting for the
// shared listing is part of the waiter's startup_timeout_sec.
//
// Sessions of one sidecar share a server's config, so a waiter never starts
// before its leader: B waits for A's listing, A times out, B lists on its
// own and must give up at its own deadline, counted from its own start
// (about T after A's). The reference is C, another server that hangs the
// same way with a longer timeout (1.5 T), opened once B joined A's listing:
// B must fail before C, by at least T/2. Were B's wait not counted, B would
// fail a whole timeout after A, about 2 T after A's start, and C (about
// 1.5 T after it) first.
func TestSharedListingWaitCountsAgainstOwnTimeout(t *testing.T) {
	const timeout = 2.0
	dir := t.TempDir()
	spec := gatedSpec(dir) // the gate never opens
	cfg := fixture.Config("s", spec)
	cfg.StartupTimeoutSec = seconds(timeout)
	ref := fixture.Config("ref", gatedSpec(t.TempDir()))
	ref.StartupTimeoutSec = seconds(1.5 * timeout)
	h, joins := newSharingHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": cfg, "ref": ref}, nil)

	h.open(map[string]any{"sessionId": "A", "startup": "eager", "servers": []string{"s"}})
	waitFileLines(t, spec.CountFile, 1)
	h.open(map[string]any{"sessionId": "B", "startup": "eager", "servers": []string{"s"}})
	waitJoined(t, joins, 1, spec.CountFile, 1)
	h.open(map[string]any{"sessionId": "C", "startup": "eager", "servers": []string{"ref"}})

	for id, server := range map[string]string{"A": "s", "B": "s", "C": "ref"} {
		sum := h.waitComplete(id, 0)
		if len(sum.Failed) != 1 || !strings.Contains(sum.Failed[0].Error, "startup_timeout_sec") || !strings.Contains(sum.Failed[0].Error, fmt.Sprintf("%q", server)) {
			t.Errorf("session %s round 0 = %+v: want %s failed naming the server and startup_timeout_sec", id, sum, server)
		}
	}
	failedAt := map[string]int{}
	for i, n := range h.notifications() {
		var p protocol.StartupStatusParams
		if n.Method == protocol.NotifyStartupStatus && json.Unmarshal(n.Params, &p) == nil && p.Status == protocol.StatusFailed {
			failedAt[p.SessionID] = i
		}
	}
	if failedAt["B"] > failedAt["C"] {
		t.Errorf("B (waited for A's listing, timeout T) failed after C (opened later, timeout 1.5 T): the wait was not counted against B's startup_timeout_sec")
	}
	_, err := h.callTool(map[string]any{"sessionId": "B", "server": "s", "tool": "echo"})
	je, data := h.wantCode(err, protocol.CodeStartupTimeout)
	if data.Server != "s" || !strings.Contains(je.Message, "startup_timeout_sec") {
		t.Errorf("error %q data %+v: want server s and startup_timeout_sec named", je.Message, data)
	}
}

// TestSharedListingOptOut: a server that says its catalog is not cacheable
// never shares a listing and is never written to disk, so a lazy session
// cannot keep it dormant either.
func TestSharedListingOptOut(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	spec := gatedSpec(dir)
	spec.Experimental = map[string]json.RawMessage{"codex/tool-catalog-cache": json.RawMessage(`{"cacheable":false}`)}
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}, map[string]any{
		"cacheDir": cacheDir, "features": map[string]bool{"mcp_lazy_stdio_startup": true},
	})
	const n = 4
	var params []map[string]any
	for i := range n {
		params = append(params, map[string]any{"sessionId": fmt.Sprintf("o%d", i), "startup": "eager"})
	}
	openAll(t, h, params)
	// Each lists over its own connection while the gate is closed.
	lines := waitFileLines(t, spec.CountFile, n)
	if got := distinct(linePIDs(t, lines)); got != n {
		t.Errorf("listings %q from %d processes, want %d", lines, got, n)
	}
	openGate(t, spec.BlockListUntilFile)
	for i := range n {
		wantReady(t, h, fmt.Sprintf("o%d", i), "s", gatedTools)
	}
	if err := h.call(protocol.MethodServersRefresh, map[string]any{"sessionId": "o0", "server": "s"}, nil); err != nil {
		t.Fatal(err)
	}
	if files := cacheFiles(t, cacheDir); len(files) != 0 {
		t.Errorf("opted-out server cached on disk: %q", files)
	}
	open := h.open(map[string]any{"sessionId": "lazy", "startup": "lazy"})
	if diff := cmp.Diff([]protocol.ServerState{{Name: "s", State: protocol.StateStarting}}, open.Servers); diff != "" {
		t.Errorf("lazy session with an uncacheable server (-want +got):\n%s", diff)
	}
	wantReady(t, h, "lazy", "s", gatedTools)
	if files := cacheFiles(t, cacheDir); len(files) != 0 {
		t.Errorf("opted-out server cached on disk: %q", files)
	}
}

// cacheFiles lists the catalog files and leftovers (temp files) in dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestStartupAfterSharedListingListsAgain: a startup that begins after the
// scope's listing finished fetches from the server; nothing is replayed.
func TestStartupAfterSharedListingListsAgain(t *testing.T) {
	count := tempFile(t, "count")
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{CountFile: count, Tools: []fixture.ToolSpec{tool("echo", "echo")}})}, nil)
	h.open(map[string]any{"sessionId": "first", "startup": "eager"})
	wantReady(t, h, "first", "s", []string{"echo"})
	h.open(map[string]any{"sessionId": "late", "startup": "eager"})
	wantReady(t, h, "late", "s", []string{"echo"})
	lines := fixture.ReadLines(count)
	if len(lines) != 2 || distinct(linePIDs(t, lines)) != 2 {
		t.Errorf("tools/list lines %q: want one per session, each from its own process", lines)
	}
}

// cacheEntryFile returns the single catalog file in dir and its scope key.
func cacheEntryFile(t *testing.T, dir string) (path, key string) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "tools-v*-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(matches) != 1 {
		t.Fatalf("catalog files in %s: %q (all: %q), want exactly one", dir, matches, cacheFiles(t, dir))
	}
	base := filepath.Base(matches[0])
	key = strings.TrimSuffix(base[strings.LastIndexByte(base, '-')+1:], ".json")
	return matches[0], key
}

// cacheLogs returns the mcp/log data that talk about the catalog cache.
func cacheLogs(h *harness) []string {
	var logs []string
	for _, n := range h.notifications() {
		if n.Method != protocol.NotifyLog {
			continue
		}
		var p protocol.LogParams
		if json.Unmarshal(n.Params, &p) == nil && strings.Contains(strings.ToLower(string(p.Data)), "cache") {
			logs = append(logs, string(p.Data))
		}
	}
	return logs
}

// TestDiskCacheFile: a live listing is written to one file per scope, 0600
// in a 0700 folder, with the raw definitions and no secret value anywhere.
func TestDiskCacheFile(t *testing.T) {
	const secret = "sk-live-0123456789-very-secret"
	cacheDir := filepath.Join(t.TempDir(), "cache")
	def := `{"name":"raw","description":"keeps <bytes> & 12345678901234567890","inputSchema":{"type":"object","x-k":[1.0,2e10]}}`
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo"), rawTool(def, "echo")}})
	cfg.Env["API_TOKEN"] = secret
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]any{"cacheDir": cacheDir})
	open := h.open(map[string]any{"startup": "eager", "scope": map[string]any{"account": "acme"}})
	wantReady(t, h, open.SessionID, "s", []string{"echo", "raw"})

	path, key := cacheEntryFile(t, cacheDir)
	if fi, err := os.Stat(cacheDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache folder: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	if files := cacheFiles(t, cacheDir); len(files) != 1 {
		t.Errorf("cache folder holds %q, want the one catalog file (no temp files)", files)
	}
	entry, err := (&catalog.DiskCache{Dir: cacheDir}).Load(key)
	if err != nil || entry == nil {
		t.Fatalf("loading the sidecar's cache file: %v", err)
	}
	if entry.Version != catalog.CacheVersion || entry.Server != "s" || entry.ListedAt.IsZero() || len(entry.Tools) != 2 {
		t.Errorf("cache entry %+v: want version, server s, listing time and 2 tools", entry)
	}
	if len(entry.Tools) == 2 && compact(t, string(entry.Tools[1])) != compact(t, def) {
		t.Errorf("cached definition\n got %s\nwant %s", entry.Tools[1], def)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) || strings.Contains(path, secret) {
		t.Errorf("the cache file holds the env secret")
	}
	for _, n := range h.notifications() {
		if strings.Contains(string(n.Params), secret) {
			t.Errorf("notification %s carries the env secret", n.Method)
		}
	}
}

// primeCache runs one eager session of servers against cacheDir in a
// sidecar of its own, so a later sidecar finds their catalogs on disk, and
// closes it (its processes end). before runs before the session closes.
func primeCache(t *testing.T, cacheDir string, servers map[string]*config.ServerConfig, before func(h *harness, session string)) {
	t.Helper()
	h := newHarness(t)
	// With tools/list_changed off, what the last listing wrote stays: a
	// notification of a change made in before (go-sdk sends it some
	// milliseconds after the change) would otherwise remove the entry a
	// servers/refresh in before has just written.
	h.initialize(servers, map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_tool_list_changed": false}})
	open := h.open(map[string]any{"startup": "eager"})
	sum := h.waitComplete(open.SessionID, 0)
	if len(sum.Ready) != len(servers) {
		t.Fatalf("priming the cache: round 0 = %+v", sum)
	}
	if before != nil {
		before(h, open.SessionID)
	}
	if err := h.call(protocol.MethodSessionClose, map[string]any{"sessionId": open.SessionID}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestDiskCacheUnusableFileIgnoredReplacedReportedOnce: a damaged cache file
// is not used, is reported once, and the live listing replaces it.
func TestDiskCacheUnusableFileIgnoredReplacedReportedOnce(t *testing.T) {
	cfg := fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo"), tool("second", "echo")}})
	servers := map[string]*config.ServerConfig{"s": cfg}
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, good []byte)
	}{
		{"truncated", func(t *testing.T, path string, good []byte) {
			writeFileKeepMode(t, path, good[:len(good)/2])
		}},
		{"corrupt", func(t *testing.T, path string, good []byte) {
			writeFileKeepMode(t, path, bytes.Replace(good, []byte(`"echo"`), []byte(`"ech0"`), 1))
		}},
		{"not JSON", func(t *testing.T, path string, good []byte) {
			writeFileKeepMode(t, path, []byte("\x00\x01garbage{"))
		}},
		{"other version", func(t *testing.T, path string, good []byte) {
			v := []byte(fmt.Sprintf(`"version":%d`, catalog.CacheVersion))
			if !bytes.Contains(good, v) {
				t.Fatalf("cache file has no %s: %s", v, good)
			}
			writeFileKeepMode(t, path, bytes.Replace(good, v, []byte(`"version":99`), 1))
		}},
		{"oversized", func(t *testing.T, path string, good []byte) {
			// A valid entry padded with whitespace past the size bound:
			// only the bound can reject it.
			pad := bytes.Repeat([]byte(" "), catalog.DefaultMaxCacheBytes)
			writeFileKeepMode(t, path, append(slices.Clone(good), pad...))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cacheDir := filepath.Join(t.TempDir(), "cache")
			primeCache(t, cacheDir, servers, nil)
			path, key := cacheEntryFile(t, cacheDir)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, path, good)

			h := newHarness(t)
			h.initialize(servers, map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_lazy_stdio_startup": true}})
			open := h.open(map[string]any{"sessionId": "first"})
			if diff := cmp.Diff([]protocol.ServerState{{Name: "s", State: protocol.StateStarting}}, open.Servers); diff != "" {
				t.Errorf("lazy session over an unusable cache file (-want +got):\n%s", diff)
			}
			wantReady(t, h, "first", "s", []string{"echo", "second"})
			if logs := cacheLogs(h); len(logs) != 1 {
				t.Errorf("mcp/log about the cache: %q, want exactly one report", logs)
			}
			// Replaced by the live listing: valid again, and a new lazy
			// session keeps the server dormant on it.
			entry, err := (&catalog.DiskCache{Dir: cacheDir}).Load(key)
			if err != nil || entry == nil || len(entry.Tools) != 2 {
				t.Fatalf("cache file after the live listing: %+v, %v; want the 2 live tools", entry, err)
			}
			open = h.open(map[string]any{"sessionId": "second"})
			if diff := cmp.Diff([]protocol.ServerState{{Name: "s", State: protocol.StateDormant}}, open.Servers); diff != "" {
				t.Errorf("lazy session over the replaced cache file (-want +got):\n%s", diff)
			}
			if logs := cacheLogs(h); len(logs) != 1 {
				t.Errorf("mcp/log about the cache: %q, want still exactly one report", logs)
			}
		})
	}
}

func writeFileKeepMode(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDiskCacheUnwritableFolder: a cache folder that cannot be created
// costs the cache, not the service, and the host is told.
func TestDiskCacheUnwritableFolder(t *testing.T) {
	blocker := tempFile(t, "not-a-dir")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(blocker, "cache") // under a regular file: unwritable, even for root
	h := newHarness(t)
	h.initialize(map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{tool("echo", "echo")}})},
		map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_lazy_stdio_startup": true}})
	for _, startup := range []string{"eager", "lazy"} {
		open := h.open(map[string]any{"startup": startup})
		if open.Servers[0].State != protocol.StateStarting {
			t.Errorf("%s session: s is %s, want starting", startup, open.Servers[0].State)
		}
		wantReady(t, h, open.SessionID, "s", []string{"echo"})
		if _, err := h.callTool(map[string]any{"sessionId": open.SessionID, "name": "mcp__s__echo"}); err != nil {
			t.Errorf("%s session: call with an unwritable cache: %v", startup, err)
		}
	}
	if logs := cacheLogs(h); len(logs) == 0 {
		t.Errorf("no mcp/log says the catalog cache cannot be written")
	}
}

// TestDiskCacheTwoSidecarProcesses: two sidecar processes keep rewriting
// the catalog of one scope; a reader never sees a torn file and nothing is
// left behind.
func TestDiskCacheTwoSidecarProcesses(t *testing.T) {
	cacheDir := filepath.Join(t.TempDir(), "cache")
	// A catalog of some size, so that a torn write would be visible.
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", fixture.Spec{ToolCount: 300})}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	type sidecar struct {
		c       *hostclient.Client
		session string
	}
	var cars []sidecar
	for range 2 {
		p := startSidecarProcess(t)
		c := hostclient.New(ctx, p.stdout, p.stdin, hostclient.Options{Checker: schemaChecker(t)})
		t.Cleanup(func() { c.Close() })
		if err := c.Call(ctx, protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "test"}, "cacheDir": cacheDir, "servers": servers}, nil); err != nil {
			t.Fatal(err)
		}
		var open protocol.SessionOpenResult
		if err := c.Call(ctx, protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open); err != nil {
			t.Fatal(err)
		}
		var list protocol.ToolsListResult
		if err := c.Call(ctx, protocol.MethodToolsList, map[string]any{"sessionId": open.SessionID}, &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Tools) != 300 {
			t.Fatalf("sidecar lists %d tools, want 300", len(list.Tools))
		}
		cars = append(cars, sidecar{c, open.SessionID})
	}
	_, key := cacheEntryFile(t, cacheDir)
	disk := &catalog.DiskCache{Dir: cacheDir}

	const refreshes = 15
	var writers sync.WaitGroup
	errs := make([]error, len(cars))
	for i, car := range cars {
		writers.Go(func() {
			for range refreshes {
				if err := car.c.Call(ctx, protocol.MethodServersRefresh, map[string]any{"sessionId": car.session, "server": "s"}, nil); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { writers.Wait(); close(done) }()
	reads := 0
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		entry, err := disk.Load(key)
		if err != nil || entry == nil || len(entry.Tools) != 300 {
			t.Fatalf("read %d of the cache file while two sidecars write it: %+v, %v", reads, entry, err)
		}
		reads++
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("servers/refresh: %v", err)
	}
	// A refresh writes the disk in the background, after its reply;
	// session/close waits for that write.
	for _, car := range cars {
		if err := car.c.Call(ctx, protocol.MethodSessionClose, map[string]any{"sessionId": car.session}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if files := cacheFiles(t, cacheDir); len(files) != 1 {
		t.Errorf("cache folder holds %q after the writers, want one catalog file", files)
	}
}

// TestDiskCacheUnusableFileReportedOnceAcrossSessions: sessions that open
// while a damaged file is still on disk (its replacement is not listed
// yet) do not each report it: the host hears of one bad file once.
func TestDiskCacheUnusableFileReportedOnceAcrossSessions(t *testing.T) {
	dir := t.TempDir()
	cacheDir := filepath.Join(dir, "cache")
	spec := gatedSpec(dir)
	servers := map[string]*config.ServerConfig{"s": fixture.Config("s", spec)}
	openGate(t, spec.BlockListUntilFile)
	primeCache(t, cacheDir, servers, nil)
	path, key := cacheEntryFile(t, cacheDir)
	writeFileKeepMode(t, path, []byte(`{"version":1,"tru`))
	if err := os.Remove(spec.BlockListUntilFile); err != nil {
		t.Fatal(err)
	}

	h, joins := newSharingHarness(t)
	h.initialize(servers, map[string]any{"cacheDir": cacheDir, "features": map[string]bool{"mcp_lazy_stdio_startup": true}})
	for _, id := range []string{"a", "b", "c"} {
		if open := h.open(map[string]any{"sessionId": id}); open.Servers[0].State != protocol.StateStarting {
			t.Errorf("session %s over a damaged cache file: %+v, want s starting", id, open.Servers)
		}
	}
	joins.wait(t, 2, "two startups joining the first one's listing")
	openGate(t, spec.BlockListUntilFile)
	for _, id := range []string{"a", "b", "c"} {
		wantReady(t, h, id, "s", gatedTools)
	}
	if logs := cacheLogs(h); len(logs) != 1 {
		t.Errorf("mcp/log about the damaged cache file: %d reports, want 1: %q", len(logs), logs)
	}
	if entry, err := (&catalog.DiskCache{Dir: cacheDir}).Load(key); err != nil || entry == nil {
		t.Errorf("cache file not replaced: %+v, %v", entry, err)
	}
}
