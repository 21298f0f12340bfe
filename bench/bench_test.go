package bench

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// The benchmarks: one per measurement of issue 8, each with the sidecar
// path and its baseline as sub-benchmarks of the same run. They are short
// enough for CI to run once each:
//
//	go test -run '^$' -bench . -benchtime=1x ./bench/
//
// Custom metrics (b.ReportMetric) carry the figures that are not per-op
// times: listings, spawned processes, RSS, goroutines, payload copies.

// BenchmarkCall is measurement 1: an echo tools/call through the host
// protocol and the sidecar against a direct go-sdk client of the same
// stdio server, with 1, 8 and 64 calls in flight.
func BenchmarkCall(b *testing.B) {
	p := setupCallPaths(b, true)
	for _, conc := range []int{1, 8, 64} {
		for _, via := range callVias {
			b.Run(fmt.Sprintf("conc=%d/via=%s", conc, via), func(b *testing.B) {
				op := p.op(via)
				b.ReportAllocs()
				b.ResetTimer()
				tput, err := throughput(conc, b.N, op)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(tput, "calls/s")
			})
		}
	}
}

// BenchmarkStartupSharing is measurement 2: 16 concurrent session/open of
// one discovery scope (a server whose tools/list costs 50 ms), sharing on
// against off.
func BenchmarkStartupSharing(b *testing.B) {
	for _, share := range []bool{true, false} {
		b.Run(fmt.Sprintf("sharing=%v", share), func(b *testing.B) {
			var lists int
			var total time.Duration
			for range b.N {
				d, n := sharingRound(b, share)
				total += d
				lists += n
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-all-ready")
			b.ReportMetric(float64(lists)/float64(b.N), "server-lists")
		})
	}
}

// BenchmarkLazyStartup is measurement 3: ten stdio servers, session/open
// to a full tools/list, lazy with a warm disk cache against eager. The
// server-everything variant skips unless setup.sh installed it.
func BenchmarkLazyStartup(b *testing.B) {
	for _, kind := range []string{"fixture", "everything"} {
		b.Run("server="+kind, func(b *testing.B) {
			servers := lazyConfigs(b, kind)
			cacheDir := b.TempDir()
			warmCache(b, servers, cacheDir)
			for _, lazy := range []bool{true, false} {
				name := "startup=eager"
				if lazy {
					name = "startup=lazy"
				}
				b.Run(name, func(b *testing.B) {
					var total time.Duration
					spawned := 0
					for range b.N {
						d, n, _ := lazyRound(b, servers, cacheDir, lazy)
						total += d
						spawned += n
					}
					b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-catalog")
					b.ReportMetric(float64(spawned)/float64(b.N), "spawned")
				})
			}
		})
	}
}

// BenchmarkCatalogList is measurement 4: tools/list of 1k, 10k and 50k
// tools (schemas of 1-3 KiB) through the host protocol, against the host
// receiving the same bytes from a replayer (no sidecar).
func BenchmarkCatalogList(b *testing.B) {
	for _, shape := range catalogShapes {
		b.Run(fmt.Sprintf("tools=%d", shape.tools()), func(b *testing.B) {
			if shape.tools() > 10_000 && smokeRun() {
				b.Skip("skipped in a one-iteration smoke run (-benchtime=1x): it alone takes half a minute; TestReport and longer -benchtime measure it")
			}
			p := setupCatalog(b, shape)
			for _, via := range []string{"sidecar", "replay"} {
				b.Run("via="+via, func(b *testing.B) {
					op := p.op(via)
					b.SetBytes(int64(p.respLen))
					b.ReportAllocs()
					for b.Loop() {
						if err := op(); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkMemory is measurement 5: RSS of a sidecar process with 0, 10
// and 50 stdio fixture servers in one session, and the goroutines the
// sidecar adds for them (in process: a child cannot be asked).
func BenchmarkMemory(b *testing.B) {
	for _, n := range []int{0, 10, 50} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			var rss, hwm int64
			var gor int
			for range b.N {
				r, h := memoryRound(b, n)
				rss, hwm = rss+r, hwm+h
				gor += goroutinesRound(b, n)
			}
			b.ReportMetric(float64(rss)/mib/float64(b.N), "MiB-RSS")
			b.ReportMetric(float64(hwm)/mib/float64(b.N), "MiB-HWM")
			b.ReportMetric(float64(gor)/float64(b.N), "goroutines")
		})
	}
	b.Run("per-session", func(b *testing.B) {
		var rss, gor float64
		for range b.N {
			r, g := sessionCost(b)
			rss, gor = rss+r, gor+g
		}
		b.ReportMetric(rss/1024/float64(b.N), "KiB-RSS/session")
		b.ReportMetric(gor/float64(b.N), "goroutines/session")
	})
}

// BenchmarkListChanged is measurement 6: 1,000 tools/list_changed in one
// second from one server; the listings the sidecar performed and the time
// from the last notification to a correct catalog, against one direct
// tools/list (the floor).
func BenchmarkListChanged(b *testing.B) {
	p := setupStorm(b)
	b.Run("via=sidecar", func(b *testing.B) {
		var f stormFigures
		for range b.N {
			r := p.round(b)
			f.listings += r.listings
			f.toCorrect += r.toCorrect
			f.toolsChanged += r.toolsChanged
		}
		b.ReportMetric(float64(f.listings)/float64(b.N), "server-lists")
		b.ReportMetric(float64(f.toCorrect.Microseconds())/1000/float64(b.N), "ms-to-correct")
		b.ReportMetric(float64(f.toolsChanged)/float64(b.N), "toolsChanged")
	})
	b.Run("via=sidecar/notification-to-callable", func(b *testing.B) {
		for range b.N {
			p.toCallable(b)
		}
	})
	b.Run("via=sidecar/plain-tools-list", func(b *testing.B) {
		for range b.N {
			p.plainList(b)
		}
	})
	b.Run("via=direct-one-listing", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.direct.listTools(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPayload is measurement 7: a 10 MiB tool result and a 1 MiB
// argument through the sidecar against direct (and against the host alone,
// replayed). copies/op is bytes allocated per payload byte.
func BenchmarkPayload(b *testing.B) {
	p := setupPayload(b, true)
	for _, dir := range []string{"result", "argument"} {
		size := resultBytes
		if dir == "argument" {
			size = argBytes
		}
		for _, via := range []string{"direct", "sidecar", "sidecar-process", "replay"} {
			b.Run(fmt.Sprintf("dir=%s/via=%s", dir, via), func(b *testing.B) {
				op := p.op(dir, via)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				for b.Loop() {
					if err := op(); err != nil {
						b.Fatal(err)
					}
				}
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(size)/float64(b.N), "alloc-copies/op")
				if via == "sidecar-process" {
					b.ReportMetric(peakCopies(b, dir), "peak-RSS-copies")
				}
			})
		}
	}
}

// smokeRun reports whether this is CI's one-iteration smoke run.
func smokeRun() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && f.Value.String() == "1x"
}
