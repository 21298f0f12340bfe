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
// the README's run; "0.2" a quick look).
const reportEnv = "MCP_SIDECAR_BENCH_REPORT"

// TestReport runs the seven measurements of issue 8 with enough
// repetitions for medians and p99, and prints a Markdown section for the
// README (also written to the file named by MCP_SIDECAR_BENCH_REPORT_OUT):
//
//	MCP_SIDECAR_BENCH_REPORT=1 go test -run TestReport -v -timeout 30m ./bench/
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

	var out bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }
	p("Machine: %s. Command: `%s=%s go test -run TestReport -v -timeout 30m ./bench/`.\n\n", machine(), reportEnv, v)
	p("| # | measurement | sidecar | baseline | ratio | goal |\n|---|---|---|---|---|---|\n")

	// 1. Call overhead.
	t.Log("1. call overhead")
	cf := measureCalls(t, reps(2000))
	med := func(via string) time.Duration { return median(cf.latency[via]) }
	p99 := func(via string) time.Duration { return quantile(cf.latency[via], 0.99) }
	for _, via := range []string{"sidecar", "sidecar-process"} {
		ratio := float64(med(via)) / float64(med("direct"))
		p("| 1 | echo tools/call latency, median (%s, n=%d) | %s | %s direct | %.2fx | < 1.3x: %s |\n",
			via, len(cf.latency[via]), ms(med(via)), ms(med("direct")), ratio, verdict(ratio < 1.3))
		p("| 1 | echo tools/call latency, p99 (%s) | %s | %s direct | %.2fx | |\n",
			via, ms(p99(via)), ms(p99("direct")), float64(p99(via))/float64(p99("direct")))
		for _, conc := range []int{1, 8, 64} {
			r := cf.throughput[via][conc] / cf.throughput["direct"][conc]
			goal := ""
			if conc == 8 {
				goal = ">= 0.8x: " + verdict(r >= 0.8)
			}
			p("| 1 | throughput, %d in flight (%s; median of 3 runs) | %.0f calls/s | %.0f calls/s direct | %.2fx | %s |\n",
				conc, via, cf.throughput[via][conc], cf.throughput["direct"][conc], r, goal)
		}
	}

	// 2. Startup sharing.
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

	// 3. Lazy startup.
	t.Log("3. lazy startup")
	for _, kind := range []string{"everything", "fixture"} {
		if kind == "everything" {
			if _, _, why := everythingEntry(); why != "" {
				p("| 3 | ten server-everything: skipped (%s) | | | | |\n", why)
				continue
			}
		}
		servers := lazyConfigs(t, kind)
		cacheDir := t.TempDir()
		warmCache(t, servers, cacheDir)
		var lazyT, eagerT []time.Duration
		spawned, tools := 0, 0
		for range reps(10) {
			d, n, tl := lazyRound(t, servers, cacheDir, true)
			lazyT, spawned, tools = append(lazyT, d), spawned+n, tl
		}
		for range reps(3) {
			d, _, tl := lazyRound(t, servers, cacheDir, false)
			if tl != tools {
				t.Errorf("%s: eager listed %d tools, lazy %d", kind, tl, tools)
			}
			eagerT = append(eagerT, d)
		}
		ratio := float64(median(eagerT)) / float64(median(lazyT))
		p("| 3 | ten %s stdio servers (%d tools): session/open to full tools/list, lazy (warm disk cache) vs eager, medians | %s, %d processes spawned | %s eager | %.0fx faster | >= 20x, 0 spawned: %s |\n",
			kind, tools, ms(median(lazyT)), spawned, ms(median(eagerT)), ratio, verdict(ratio >= 20 && spawned == 0))
	}

	// 4. Catalog scale.
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

	// 5. Memory.
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

	// 6. list_changed.
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

	// 7. Large payloads.
	t.Log("7. large payloads")
	pp := setupPayload(t, true)
	for _, dir := range []string{"result", "argument"} {
		size, what := resultBytes, "10 MiB tool result"
		if dir == "argument" {
			size, what = argBytes, "1 MiB argument"
		}
		times := map[string]time.Duration{}
		allocs := map[string]float64{}
		for _, via := range []string{"direct", "sidecar", "sidecar-process", "replay"} {
			ds, err := sample(reps(10), pp.op(dir, via))
			if err != nil {
				t.Fatal(err)
			}
			times[via] = median(ds)
			allocs[via], _ = allocated(2, pp.op(dir, via))
		}
		var peaks []float64
		for range reps(3) {
			peaks = append(peaks, peakCopies(t, dir))
		}
		sidecarCopies := (allocs["sidecar"] - allocs["replay"]) / float64(size)
		p("| 7 | %s, median time (in process; process) | %s; %s | %s direct | %.2fx; %.2fx | |\n",
			what, ms(times["sidecar"]), ms(times["sidecar-process"]), ms(times["direct"]),
			float64(times["sidecar"])/float64(times["direct"]), float64(times["sidecar-process"])/float64(times["direct"]))
		p("| 7 | ... memory: sidecar process peak RSS above rest; bytes the sidecar allocates (in process, host's share removed) | %.1f payloads peak; %.1f payloads allocated | direct client allocates %.1f payloads; the Go host alone %.1f | | <= 3 copies: %s |\n",
			medianF(peaks), sidecarCopies, allocs["direct"]/float64(size), allocs["replay"]/float64(size), verdict(medianF(peaks) <= 3))
	}

	fmt.Println(out.String())
	if path := os.Getenv("MCP_SIDECAR_BENCH_REPORT_OUT"); path != "" {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

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
