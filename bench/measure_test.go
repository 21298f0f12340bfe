package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// The seven measurements of bench/README.md's table of the last full run. Each has a
// setup and a round (one repetition) used by both the benchmarks (one
// round per b.N iteration) and TestReport (many rounds, medians).

// --- 1. Call overhead -------------------------------------------------

var echoArgs = json.RawMessage(`{"text":"hello"}`)

func fixtureEcho() *config.ServerConfig {
	return fixture.Config("s", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}})
}

// callPaths is one stdio server with an echo tool ("fixture" or
// "everything") behind each contender.
type callPaths struct {
	args json.RawMessage
	via  map[string]contender
}

func setupCallPaths(tb testing.TB, kind string) *callPaths {
	tb.Helper()
	cfg, args, version := echoServer(tb, kind)
	p := &callPaths{args: args, via: map[string]contender{}}
	for _, name := range contenderNames {
		p.via[name] = startContender(tb, name, cfg, version)
	}
	return p
}

// op returns one echo call through the named contender.
func (p *callPaths) op(via string) func() error { return checkedCall(p.via[via], "echo", p.args) }

type callFigures struct {
	latency map[string][]time.Duration
	// switches and cpu are the context switches and the CPU time per call
	// of the process between host and server (floor relay, sidecar) while
	// latency was sampled.
	switches   map[string]float64
	cpu        map[string]time.Duration
	throughput map[string]map[int]float64 // via -> concurrency -> calls/s (median of runs)
}

func measureCalls(tb testing.TB, kind string, reps int) callFigures {
	tb.Helper()
	p := setupCallPaths(tb, kind)
	f := callFigures{latency: map[string][]time.Duration{}, switches: map[string]float64{}, cpu: map[string]time.Duration{}, throughput: map[string]map[int]float64{}}
	for _, via := range contenderNames {
		if _, err := sample(50, p.op(via)); err != nil { // warm up
			tb.Fatalf("%s: %v", via, err)
		}
	}
	// Interleaved blocks, so that drift on a shared machine hits every
	// contender alike.
	const blocks = 10
	used := map[string]procUsage{}
	for range blocks {
		for _, via := range contenderNames {
			pid := p.via[via].pid()
			var before procUsage
			if pid != 0 {
				before, _ = usageOf(pid)
			}
			ds, err := sample(max(reps/blocks, 1), p.op(via))
			if err != nil {
				tb.Fatalf("%s: %v", via, err)
			}
			if pid != 0 {
				after, _ := usageOf(pid)
				d := after.sub(before)
				used[via] = procUsage{switches: used[via].switches + d.switches, cpu: used[via].cpu + d.cpu}
			}
			f.latency[via] = append(f.latency[via], ds...)
		}
	}
	for via, u := range used {
		n := len(f.latency[via])
		f.switches[via] = float64(u.switches) / float64(n)
		f.cpu[via] = u.cpu / time.Duration(n)
	}
	runs := map[string]map[int][]float64{}
	for range 3 {
		for _, conc := range []int{1, 8, 64} {
			for _, via := range contenderNames {
				tput, err := throughput(conc, max(reps, 64*4), p.op(via))
				if err != nil {
					tb.Fatalf("%s x%d: %v", via, conc, err)
				}
				if runs[via] == nil {
					runs[via] = map[int][]float64{}
				}
				runs[via][conc] = append(runs[via][conc], tput)
			}
		}
	}
	for via, m := range runs {
		f.throughput[via] = map[int]float64{}
		for conc, xs := range m {
			f.throughput[via][conc] = medianF(xs)
		}
	}
	return f
}

// --- 2. Startup sharing -----------------------------------------------

const (
	sharingSessions = 16
	sharingTools    = 100
	sharingDelayMs  = 50 // a tools/list that costs the server 50 ms
)

// sharingRound opens sharingSessions sessions of one discovery scope at
// once in a fresh sidecar and returns the time until every one listed its
// tools, and how many tools/list requests the server processes received.
func sharingRound(tb testing.TB, share bool) (time.Duration, int) {
	tb.Helper()
	countFile := filepath.Join(tb.TempDir(), "lists")
	cfg := fixture.Config("s", fixture.Spec{ToolCount: sharingTools, ListDelayMs: sharingDelayMs, CountFile: countFile})
	h := startHost(tb, hostOptions{})
	h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]bool{"mcp_share_startup_listing": share}, "")
	scope := map[string]any{"account": "a", "workspace": "/w"}
	var wg sync.WaitGroup
	t0 := time.Now()
	for range sharingSessions {
		wg.Go(func() {
			if _, list := h.open("eager", scope); len(list.Tools) != sharingTools {
				tb.Errorf("a session listed %d tools, want %d", len(list.Tools), sharingTools)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	b, err := os.ReadFile(countFile)
	if err != nil {
		tb.Fatal(err)
	}
	h.stop()
	return elapsed, strings.Count(string(b), "tools/list ")
}

// --- 3. Lazy startup ----------------------------------------------------

const lazyServers = 10

// everythingEntry returns the server-everything entry point installed by
// setup.sh (or named by MCP_SIDECAR_SERVER_EVERYTHING), or "" and why not.
func everythingEntry() (node, entry, why string) {
	entry = os.Getenv("MCP_SIDECAR_SERVER_EVERYTHING")
	if entry == "" {
		abs, _ := filepath.Abs(filepath.Join(".work", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
		entry = abs
	}
	if _, err := os.Stat(entry); err != nil {
		return "", "", fmt.Sprintf("server-everything is not installed (%v): run bench/setup.sh", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", "", "node is not on PATH: " + err.Error()
	}
	node, _ = filepath.Abs(node)
	return node, entry, ""
}

// lazyConfigs returns lazyServers servers of one kind: "everything" or
// "fixture" (the fixture with server-everything's 13 tools' worth of
// schema, for CI runs without npm).
func lazyConfigs(tb testing.TB, kind string) map[string]*config.ServerConfig {
	tb.Helper()
	servers := map[string]*config.ServerConfig{}
	for i := range lazyServers {
		name := fmt.Sprintf("s%d", i)
		switch kind {
		case "everything":
			node, entry, why := everythingEntry()
			if why != "" {
				tb.Skip(why)
			}
			servers[name] = &config.ServerConfig{Name: name, Command: node, Args: []string{entry}}
		default:
			servers[name] = fixture.Config(name, fixture.Spec{ToolCount: 13})
		}
	}
	return servers
}

// lazyFeatures are initialize's features for measurement 3: lazy startup,
// and mcp_tool_list_changed as told (server-everything announces changes
// right after initialized, which must not keep its catalog off the disk).
func lazyFeatures(listChanged bool) map[string]bool {
	return map[string]bool{"mcp_lazy_stdio_startup": true, "mcp_tool_list_changed": listChanged}
}

// warmCache runs one eager session so that cacheDir holds every catalog.
func warmCache(tb testing.TB, servers map[string]*config.ServerConfig, features map[string]bool, cacheDir string) {
	tb.Helper()
	h := startHost(tb, hostOptions{})
	h.initialize(servers, features, cacheDir)
	h.open("eager", nil)
	h.stop()
}

// lazyRound is session/open to a full tools/list in a fresh sidecar; it
// returns the time, the number of processes the sidecar spawned meanwhile
// and the number of tools listed.
func lazyRound(tb testing.TB, servers map[string]*config.ServerConfig, features map[string]bool, cacheDir string, lazy bool) (time.Duration, int, int) {
	tb.Helper()
	h := startHost(tb, hostOptions{})
	h.initialize(servers, features, cacheDir)
	startup := "lazy"
	if !lazy {
		startup = "eager"
	}
	before := children()
	t0 := time.Now()
	_, list := h.open(startup, nil)
	elapsed := time.Since(t0)
	spawned := 0
	for _, pid := range children() {
		if !slices.Contains(before, pid) {
			spawned++
		}
	}
	if lazy {
		for _, s := range list.Servers {
			if s.Catalog != protocol.CatalogCached {
				tb.Errorf("lazy: server %s catalog %s, want cached", s.Name, s.Catalog)
			}
		}
	}
	h.stop()
	return elapsed, spawned, len(list.Tools)
}

// --- 4. Catalog scale ---------------------------------------------------

type catalogShape struct{ servers, toolsPer int }

func (c catalogShape) tools() int { return c.servers * c.toolsPer }

var catalogShapes = []catalogShape{{10, 100}, {100, 100}, {100, 500}}

// catalogPaths is a sidecar with shape's servers connected, and a replay
// host that receives the same tools/list result bytes without a sidecar.
type catalogPaths struct {
	h       *host
	sess    string
	replay  caller
	respLen int
}

func setupCatalog(tb testing.TB, shape catalogShape) *catalogPaths {
	tb.Helper()
	servers := map[string]*config.ServerConfig{}
	for i := range shape.servers {
		name := fmt.Sprintf("srv%03d", i)
		servers[name] = benchServerConfig(name, serverSpec{Tools: shape.toolsPer - 5}) // + the 5 fixed tools
	}
	p := &catalogPaths{h: startHost(tb, hostOptions{bigFrames: true})}
	p.h.initialize(servers, nil, "")
	// An incomplete catalog would make the figures meaningless, and would
	// be a sidecar bug (one such race was found here and fixed): fail.
	var raw json.RawMessage
	var open protocol.SessionOpenResult
	p.h.mustCall(protocol.MethodSessionOpen, map[string]any{"startup": "eager"}, &open)
	p.sess = open.SessionID
	// After the round's summary every startup has published its tools.
	p.h.waitComplete()
	p.h.mustCall(protocol.MethodToolsList, map[string]any{"sessionId": p.sess}, &raw)
	missing, err := missingTools(raw, shape)
	if err != nil {
		tb.Fatal(err)
	}
	if missing != "" {
		tb.Fatalf("session %s: incomplete catalog: %s", p.sess, missing)
	}
	p.respLen = len(raw)
	p.replay = startReplayHost(tb, raw, true)
	return p
}

func (p *catalogPaths) op(via string) func() error {
	c := p.h.c
	if via == "replay" {
		c = p.replay
	}
	return func() error {
		var raw json.RawMessage
		if err := callOn(c, protocol.MethodToolsList, map[string]any{"sessionId": p.sess}, &raw); err != nil {
			return err
		}
		if len(raw) != p.respLen {
			return fmt.Errorf("tools/list result of %d bytes, want %d", len(raw), p.respLen)
		}
		return nil
	}
}

// --- 5. Memory ----------------------------------------------------------

func memoryServers(n int) map[string]*config.ServerConfig {
	servers := map[string]*config.ServerConfig{}
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		servers[name] = fixture.Config(name, fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}})
	}
	return servers
}

// memoryRound starts a sidecar process with n fixture servers and one
// session connected to all of them; it returns VmRSS and VmHWM.
func memoryRound(tb testing.TB, n int) (rss, hwm int64) {
	tb.Helper()
	h := startHost(tb, hostOptions{process: true})
	h.initialize(memoryServers(n), nil, "")
	h.open("eager", nil)
	rss, hwm, err := procStatus(h.pid)
	if err != nil {
		tb.Fatal(err)
	}
	h.stop()
	return rss, hwm
}

// goroutinesRound is memoryRound in process: the goroutines the sidecar
// added for n servers in one session.
func goroutinesRound(tb testing.TB, n int) int {
	tb.Helper()
	h := startHost(tb, hostOptions{})
	h.initialize(memoryServers(n), nil, "")
	before := runtime.NumGoroutine()
	h.open("eager", nil)
	after := runtime.NumGoroutine()
	h.stop()
	return after - before
}

const extraSessions = 10

// sessionCost opens extraSessions more one-server sessions and returns the
// RSS growth per session (process) and goroutines per session (in process).
func sessionCost(tb testing.TB) (rssPer float64, goroutinesPer float64) {
	tb.Helper()
	servers := memoryServers(1)
	p := startHost(tb, hostOptions{process: true})
	p.initialize(servers, nil, "")
	p.open("eager", nil)
	rss0, _, _ := procStatus(p.pid)
	for range extraSessions {
		p.open("eager", nil)
	}
	rss1, _, _ := procStatus(p.pid)
	p.stop()

	h := startHost(tb, hostOptions{})
	h.initialize(servers, nil, "")
	h.open("eager", nil)
	g0 := runtime.NumGoroutine()
	for range extraSessions {
		h.open("eager", nil)
	}
	g1 := runtime.NumGoroutine()
	h.stop()
	return float64(rss1-rss0) / extraSessions, float64(g1-g0) / extraSessions
}

// --- 6. list_changed ------------------------------------------------------

const (
	stormCount = 1000
	stormMs    = 1000
)

type stormFigures struct {
	listings     int           // tools/list requests the server received during and after the storm
	toCorrect    time.Duration // from the storm's last notification to a tools/list showing the final catalog
	toolsChanged int64         // mcp/toolsChanged the host received
	polls        int           // tools/list calls the host made until correct
}

type stormPaths struct {
	h      *host
	sess   string
	direct *direct
}

func setupStorm(tb testing.TB) *stormPaths {
	tb.Helper()
	cfg := benchServerConfig("s", serverSpec{})
	p := &stormPaths{h: startHost(tb, hostOptions{}), direct: startDirect(tb, cfg)}
	p.h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]bool{"mcp_tool_list_changed": true}, "")
	p.sess, _ = p.h.open("eager", nil)
	return p
}

// toCallable is the last row of measurement 6 (list_changed to the new
// tool called): one tools/list_changed announcing a new tool, then a call
// of that tool through the host protocol. The time
// runs from the moment the host has the answer of the call that made the
// server notify (the notification precedes that answer on the wire) to
// the new tool's result: the sidecar must notice the stale catalog,
// refresh it and bind the new name within that time.
func (p *stormPaths) toCallable(tb testing.TB) time.Duration {
	tb.Helper()
	raw, err := p.h.callTool(p.sess, "mcp__s__storm", json.RawMessage(`{"count":1,"ms":0}`))
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 {
		tb.Fatalf("storm result %s: %v", raw, err)
	}
	if _, err := p.h.callTool(p.sess, "mcp__s__version_"+res.Content[0].Text, nil); err != nil {
		tb.Fatalf("the tool the notification announced is not callable: %v", err)
	}
	return time.Since(t0)
}

// plainList is the baseline of toCallable: one tools/list through the
// host protocol, no refresh.
func (p *stormPaths) plainList(tb testing.TB) time.Duration {
	tb.Helper()
	t0 := time.Now()
	var raw json.RawMessage
	p.h.mustCall(protocol.MethodToolsList, map[string]any{"sessionId": p.sess}, &raw)
	return time.Since(t0)
}

func (p *stormPaths) lists(tb testing.TB) int {
	tb.Helper()
	raw, err := p.h.callTool(p.sess, "mcp__s__stats", nil)
	if err != nil {
		tb.Fatal(err)
	}
	var res struct {
		StructuredContent struct{ Lists int } `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		tb.Fatal(err)
	}
	return res.StructuredContent.Lists
}

func (p *stormPaths) round(tb testing.TB) stormFigures {
	tb.Helper()
	lists0 := p.lists(tb)
	notes0 := p.h.toolsChanged.Load()
	raw, err := p.h.callTool(p.sess, "mcp__s__storm", json.RawMessage(fmt.Sprintf(`{"count":%d,"ms":%d}`, stormCount, stormMs)))
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) != 1 {
		tb.Fatalf("storm result %s: %v", raw, err)
	}
	want := "version_" + res.Content[0].Text
	var f stormFigures
	for deadline := time.Now().Add(safety); ; {
		f.polls++
		list := p.h.list(p.sess)
		if slices.ContainsFunc(list.Tools, func(t protocol.Tool) bool { return t.Tool == want }) {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no %s in the catalog after %s", want, safety)
		}
	}
	f.toCorrect = time.Since(t0)
	f.listings = p.lists(tb) - lists0
	f.toolsChanged = p.h.toolsChanged.Load() - notes0
	return f
}

// --- 7. Large payloads ----------------------------------------------------

const (
	resultBytes = 10 * mib
	argBytes    = 1 * mib
)

// payloadPaths is the bench server behind each contender.
type payloadPaths struct {
	via map[string]contender
}

var (
	blobArgs = json.RawMessage(fmt.Sprintf(`{"bytes":%d}`, resultBytes))
	bigArgs  = json.RawMessage(`{"data":"` + strings.Repeat("y", argBytes) + `"}`)
)

func setupPayload(tb testing.TB) *payloadPaths {
	tb.Helper()
	// The bench server has the initialize handshake only: 2025-11-25.
	cfg := benchServerConfig("s", serverSpec{})
	p := &payloadPaths{via: map[string]contender{}}
	for _, name := range contenderNames {
		p.via[name] = startContender(tb, name, cfg, legacyVersion)
	}
	return p
}

// payloadCall is one call of dir "result" (10 MiB back) or "argument"
// (1 MiB out): its tool, arguments and the least result size.
func payloadCall(dir string) (tool string, args json.RawMessage, size, want int) {
	if dir == "argument" {
		return toolEcho, bigArgs, argBytes, 0
	}
	return toolBlob, blobArgs, resultBytes, resultBytes
}

// op is one call of dir through the contender via.
func (p *payloadPaths) op(dir, via string) func() error {
	return payloadOp(p.via[via], dir)
}

func payloadOp(c contender, dir string) func() error {
	tool, args, _, want := payloadCall(dir)
	call := checkedCall(c, tool, args)
	return func() error {
		if _, ok := c.(directContender); ok || want == 0 {
			return call()
		}
		raw, err := c.callTool(tool, args)
		if err != nil {
			return err
		}
		if len(raw) < want {
			return fmt.Errorf("%s: result of %d bytes, want at least %d", tool, len(raw), want)
		}
		return nil
	}
}

// peakCopies measures, in a fresh process of the contender via (floor or
// sidecar; so that no heap grown by earlier calls hides the peak), how far
// RSS rises above its resting value during one call, in payload sizes. The
// peak includes garbage not yet collected: it is what the machine has to
// provide.
func peakCopies(tb testing.TB, dir, via string) float64 {
	tb.Helper()
	_, _, size, _ := payloadCall(dir)
	c := startContender(tb, via, benchServerConfig("s", serverSpec{}), legacyVersion)
	if err := checkedCall(c, toolEcho, echoArgs)(); err != nil {
		tb.Fatal(err)
	}
	if err := resetHWM(c.pid()); err != nil {
		tb.Skipf("cannot reset VmHWM: %v", err)
	}
	rss0, _, err := procStatus(c.pid())
	if err != nil {
		tb.Fatal(err)
	}
	if err := payloadOp(c, dir)(); err != nil {
		tb.Fatal(err)
	}
	_, hwm, _ := procStatus(c.pid())
	c.stop()
	return float64(hwm-rss0) / float64(size)
}

// missingTools describes the servers whose tools a tools/list result
// lacks, or returns "".
func missingTools(raw json.RawMessage, shape catalogShape) (string, error) {
	var res struct {
		Tools   []struct{ Server string } `json:"tools"`
		Servers []protocol.ServerCatalog  `json:"servers"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("tools/list result: %w", err)
	}
	per := map[string]int{}
	for _, t := range res.Tools {
		per[t.Server]++
	}
	var bad []string
	for _, s := range res.Servers {
		if per[s.Name] != shape.toolsPer {
			bad = append(bad, fmt.Sprintf("%s (%s, catalog %s, %d tools) %s", s.Name, s.State, s.Catalog, per[s.Name], s.Error))
		}
	}
	if len(res.Servers) != shape.servers {
		bad = append(bad, fmt.Sprintf("%d servers listed, want %d", len(res.Servers), shape.servers))
	}
	if len(bad) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d of %d tools listed; short: %s", len(res.Tools), shape.tools(), strings.Join(bad, "; ")), nil
}
