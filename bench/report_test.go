package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reportEnv turns TestReport on; its value scales the repetitions ("1" is
// bench/README.md's run; "0.2" a quick look).
const reportEnv = "MCP_SIDECAR_BENCH_REPORT"

// sectionsEnv limits TestReport to some measurements ("1,7": the call
// path); unset means all.
const sectionsEnv = "MCP_SIDECAR_BENCH_SECTIONS"

type printer func(format string, args ...any)

// TestReport runs the seven measurements of bench/README.md's
// table with enough repetitions for medians and p99, and prints a
// Markdown section for bench/README.md (also written to the file named by
// MCP_SIDECAR_BENCH_REPORT_OUT):
//
//	MCP_SIDECAR_BENCH_REPORT=1 go test -run TestReport -v -timeout 30m ./bench/
//
// Measurements 1 and 7 (the call path) print a table of their own with
// the three contenders side by side; the others one row each against
// their baseline.
func TestReport(t *testing.T) {
	v := os.Getenv(reportEnv)
	if v == "" {
		t.Skipf("set %s=1 to run the full measurement (minutes)", reportEnv)
	}
	scale, err := strconv.ParseFloat(v, 64)
	if err != nil || scale <= 0 {
		t.Fatalf("%s=%q: want a positive number (repetition scale)", reportEnv, v)
	}
	reps := func(n int) int { return max(int(float64(n)*scale), 3) }
	want := map[int]bool{}
	for f := range strings.SplitSeq(os.Getenv(sectionsEnv), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			want[n] = true
		}
	}
	all := len(want) == 0

	var out bytes.Buffer
	p := printer(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) })
	p("Machine: %s. Command: `%s=%s go test -run TestReport -v -timeout 30m ./bench/`.\n\n", machine(), reportEnv, v)
	if all || want[1] || want[7] {
		reportCallPath(t, p, reps, all || want[1], all || want[7])
	}
	sections := []func(*testing.T, printer, func(int) int){nil, nil, reportSharing, reportLazy, reportCatalog, reportMemory, reportListChanged}
	header := false
	for n := 2; n <= 6; n++ {
		if !all && !want[n] {
			continue
		}
		if !header {
			p("| # | measurement | sidecar | baseline | ratio | goal |\n|---|---|---|---|---|---|\n")
			header = true
		}
		sections[n](t, p, reps)
	}

	fmt.Println(out.String())
	if path := os.Getenv("MCP_SIDECAR_BENCH_REPORT_OUT"); path != "" {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// callLabel names a server of the call path's rows with the MCP version
// every contender speaks to it.
func callLabel(kind string) string {
	_, version, _ := strings.Cut(kind, "-")
	name, _, _ := strings.Cut(kind, "-")
	if version == "" {
		version = legacyVersion
		if kind == "fixture" {
			version = modernVersion
		}
	}
	return fmt.Sprintf("%s at %s", name, version)
}

// reportCallPath is measurements 1 (a small tools/call: latency,
// throughput) and 7 (large payloads) as one table: direct client, floor
// relay and sidecar process side by side, the sidecar's goals as ratios to
// the floor.
func reportCallPath(t *testing.T, p printer, reps func(int) int, calls, payloads bool) {
	p("| # | measurement | direct | floor relay | sidecar | sidecar / floor | goal |\n|---|---|---|---|---|---|---|\n")
	row := func(n int, what, direct, floor, sidecar string, ratio float64, goal string, ok bool) {
		r := ""
		if ratio > 0 {
			r = fmt.Sprintf("%.2fx", ratio)
		}
		if goal != "" {
			goal += ": " + verdict(ok)
		}
		p("| %d | %s | %s | %s | %s | %s | %s |\n", n, what, direct, floor, sidecar, r, goal)
	}
	if calls {
		for _, kind := range callKinds {
			if kind == "everything" {
				if _, _, why := everythingEntry(); why != "" {
					p("| 1 | echo on server-everything: skipped (%s) | | | | | |\n", why)
					continue
				}
			}
			t.Logf("1. call path, %s", kind)
			cf := measureCalls(t, kind, reps(2000))
			q := func(via string, x float64) time.Duration { return quantile(cf.latency[via], x) }
			for _, x := range []struct {
				name  string
				q     float64
				goal  string
				limit float64
			}{{"median", 0.5, "<= 1.1x", 1.1}, {"p99", 0.99, "<= 1.3x", 1.3}} {
				r := float64(q("sidecar", x.q)) / float64(q("floor", x.q))
				row(1, fmt.Sprintf("echo tools/call on %s, latency %s (n=%d each)", callLabel(kind), x.name, len(cf.latency["sidecar"])),
					ms(q("direct", x.q)), ms(q("floor", x.q)), ms(q("sidecar", x.q)), r, x.goal, r <= x.limit)
			}
			for _, conc := range []int{1, 8, 64} {
				tp := cf.throughput
				r := tp["sidecar"][conc] / tp["floor"][conc]
				goal := ""
				if conc == 8 {
					goal = ">= 0.9x"
				}
				row(1, fmt.Sprintf("... throughput, %d in flight (calls/s, median of 3 runs)", conc),
					fmt.Sprintf("%.0f", tp["direct"][conc]), fmt.Sprintf("%.0f", tp["floor"][conc]), fmt.Sprintf("%.0f", tp["sidecar"][conc]), r, goal, r >= 0.9)
			}
			row(1, "... context switches per call of the process in between", "", fmt.Sprintf("%.1f", cf.switches["floor"]),
				fmt.Sprintf("%.1f", cf.switches["sidecar"]), cf.switches["sidecar"]/cf.switches["floor"], "", false)
			row(1, "... CPU time per call of the process in between (all its threads)", "", micros(cf.cpu["floor"]),
				micros(cf.cpu["sidecar"]), float64(cf.cpu["sidecar"])/float64(cf.cpu["floor"]), "", false)
		}
	}
	if payloads {
		t.Log("7. call path, large payloads")
		pp := setupPayload(t)
		for _, dir := range []string{"argument", "result"} {
			what := "1 MiB argument (echo)"
			if dir == "result" {
				what = "10 MiB result (blob)"
			}
			times := map[string]time.Duration{}
			var samples = map[string][]time.Duration{}
			// Interleaved, as the calls above.
			for range reps(10) {
				for _, via := range contenderNames {
					ds, err := sample(1, pp.op(dir, via))
					if err != nil {
						t.Fatal(err)
					}
					samples[via] = append(samples[via], ds...)
				}
			}
			for via, ds := range samples {
				times[via] = median(ds)
			}
			peaks := map[string][]float64{}
			for range reps(3) {
				for _, via := range []string{"floor", "sidecar"} {
					peaks[via] = append(peaks[via], peakCopies(t, dir, via))
				}
			}
			row(7, what+", median time (n="+strconv.Itoa(len(samples["sidecar"]))+")", ms(times["direct"]), ms(times["floor"]), ms(times["sidecar"]),
				float64(times["sidecar"])/float64(times["floor"]), "", false)
			row(7, "... peak RSS above rest of the process in between, in payloads (median)", "", fmt.Sprintf("%.1f", medianF(peaks["floor"])),
				fmt.Sprintf("%.1f", medianF(peaks["sidecar"])), 0, "<= 3 copies", medianF(peaks["sidecar"]) <= 3)
		}
	}
	p("\n")
}

// reportSharing is measurement 2: sharing one listing among the startups of a scope.
func reportSharing(t *testing.T, p printer, reps func(int) int) {
	t.Log("2. startup sharing")
	var onT, offT []time.Duration
	var onL, offL []float64
	for range reps(5) {
		d, n := sharingRound(t, true)
		onT, onL = append(onT, d), append(onL, float64(n))
		d, n = sharingRound(t, false)
		offT, offL = append(offT, d), append(offL, float64(n))
	}
	p("| 2 | %d concurrent session/open of one scope (tools/list costs the server %d ms): server tools/list, median | %.0f | %.0f (sharing off) | %.2fx | fewer: %s |\n",
		sharingSessions, sharingDelayMs, medianF(onL), medianF(offL), medianF(onL)/medianF(offL), verdict(medianF(onL) < medianF(offL)))
	p("| 2 | ... time until all %d ready, median of %d | %s | %s (sharing off) | %.2fx | |\n",
		sharingSessions, len(onT), ms(median(onT)), ms(median(offT)), float64(median(onT))/float64(median(offT)))
}

// reportLazy is measurement 3: lazy startup from the disk cache.
func reportLazy(t *testing.T, p printer, reps func(int) int) {
	t.Log("3. lazy startup")
	for _, run := range []struct {
		kind        string
		listChanged bool
	}{{"everything", false}, {"everything", true}, {"fixture", false}} {
		kind, label, feature := run.kind, run.kind, ""
		if run.listChanged {
			label, feature = kind+" (mcp_tool_list_changed on)", ", mcp_tool_list_changed on"
		}
		if kind == "everything" {
			if _, _, why := everythingEntry(); why != "" {
				p("| 3 | ten server-everything: skipped (%s) | | | | |\n", why)
				continue
			}
		}
		servers := lazyConfigs(t, kind)
		features := lazyFeatures(run.listChanged)
		cacheDir := t.TempDir()
		warmCache(t, servers, features, cacheDir)
		var lazyT, eagerT []time.Duration
		spawned, tools := 0, 0
		for range reps(10) {
			d, n, tl := lazyRound(t, servers, features, cacheDir, true)
			lazyT, spawned, tools = append(lazyT, d), spawned+n, tl
		}
		for range reps(3) {
			d, _, tl := lazyRound(t, servers, features, cacheDir, false)
			if tl != tools {
				t.Errorf("%s: eager listed %d tools, lazy %d", label, tl, tools)
			}
			eagerT = append(eagerT, d)
		}
		ratio := float64(median(eagerT)) / float64(median(lazyT))
		p("| 3 | ten %s stdio servers (%d tools%s): session/open to full tools/list, lazy (warm disk cache) vs eager, medians | %s, %d processes spawned | %s eager | %.0fx faster | >= 20x, 0 spawned: %s |\n",
			kind, tools, feature, ms(median(lazyT)), spawned, ms(median(eagerT)), ratio, verdict(ratio >= 20 && spawned == 0))
	}
}

// reportCatalog is measurement 4: large catalogs.
func reportCatalog(t *testing.T, p printer, reps func(int) int) {
	t.Log("4. catalog scale")
	for _, shape := range catalogShapes {
		cp := setupCatalog(t, shape)
		n := reps(map[int]int{1000: 20, 10000: 7, 50000: 3}[shape.tools()])
		sd, err := sample(n, cp.op("sidecar"))
		if err != nil {
			t.Fatal(err)
		}
		rd, err := sample(n, cp.op("replay"))
		if err != nil {
			t.Fatal(err)
		}
		sa, _ := allocated(2, cp.op("sidecar"))
		ra, _ := allocated(2, cp.op("replay"))
		p("| 4 | tools/list of %d tools (%d servers, %.1f MiB result): median, allocated | %s (%.1f µs/tool), %.0f MiB (%.1fx result) | %s, %.0f MiB host alone (replay) | %.2fx | linear |\n",
			shape.tools(), shape.servers, float64(cp.respLen)/mib, ms(median(sd)), float64(median(sd).Microseconds())/float64(shape.tools()),
			sa/mib, sa/float64(cp.respLen), ms(median(rd)), ra/mib, float64(median(sd))/float64(median(rd)))
	}
}

// reportMemory is measurement 5: memory per server and per session.
func reportMemory(t *testing.T, p printer, reps func(int) int) {
	t.Log("5. memory")
	for _, n := range []int{0, 10, 50} {
		var rss, hwm, gor []float64
		for range reps(3) {
			r, h := memoryRound(t, n)
			rss, hwm = append(rss, float64(r)/mib), append(hwm, float64(h)/mib)
			gor = append(gor, float64(goroutinesRound(t, n)))
		}
		goal := ""
		if n == 50 {
			goal = "< 40 MiB: " + verdict(medianF(rss) < 40)
		}
		p("| 5 | sidecar process, %d stdio fixture servers in one session: RSS (peak), goroutines added (in process) | %.1f MiB (%.1f), %.0f goroutines | | | %s |\n",
			n, medianF(rss), medianF(hwm), medianF(gor), goal)
	}
	var perRSS, perG []float64
	for range reps(3) {
		r, g := sessionCost(t)
		perRSS, perG = append(perRSS, r/1024), append(perG, g)
	}
	p("| 5 | each additional session (one server) | %.0f KiB RSS, %.1f goroutines | | | |\n", medianF(perRSS), medianF(perG))
}

// reportListChanged is measurement 6: list_changed storms.
func reportListChanged(t *testing.T, p printer, reps func(int) int) {
	t.Log("6. list_changed")
	sp := setupStorm(t)
	var lists, polls, notes []float64
	var toCorrect []time.Duration
	for range reps(3) {
		f := sp.round(t)
		lists, polls, notes = append(lists, float64(f.listings)), append(polls, float64(f.polls)), append(notes, float64(f.toolsChanged))
		toCorrect = append(toCorrect, f.toCorrect)
	}
	dl, err := sample(reps(20), func() error { _, err := sp.direct.listTools(); return err })
	if err != nil {
		t.Fatal(err)
	}
	p("| 6 | %d list_changed in %d ms from one server: listings the server answered, median | %.0f (%.2f per notification); %.0f mcp/toolsChanged | %d (one per notification, naive client) | %.2fx | coalesced |\n",
		stormCount, stormMs, medianF(lists), medianF(lists)/stormCount, medianF(notes), stormCount, medianF(lists)/stormCount)
	p("| 6 | ... last notification to a correct tools/list, median | %s (%.0f host polls) | %s (one direct tools/list) | %.1fx | |\n",
		ms(median(toCorrect)), medianF(polls), ms(median(dl)), float64(median(toCorrect))/float64(median(dl)))

	var callable, plain []time.Duration
	for range reps(100) {
		callable = append(callable, sp.toCallable(t))
		plain = append(plain, sp.plainList(t))
	}
	p("| 6 | one list_changed to the new tool called through the host protocol, median of %d | %s | %s (a plain tools/list through the host protocol) | %.1fx | same turn |\n",
		len(callable), ms(median(callable)), ms(median(plain)), float64(median(callable))/float64(median(plain)))
}

// micros renders a short duration in microseconds.
func micros(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// machine describes where the figures were made.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	node := "no node"
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		node = "node " + strings.TrimSpace(string(out))
	}
	return fmt.Sprintf("%s, %d CPUs (GOMAXPROCS %d), %s %s/%s, %s", model, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, node)
}
