package bench

import (
	"flag"
	"fmt"
	"testing"
	"time"
)

// The benchmarks: one per measurement of bench/README.md's table of the last full run
// (numbered as there), each with the sidecar path and its baseline as
// sub-benchmarks of the same run. They are short enough for CI to run once
// each:
//
//	go test -run '^$' -bench . -benchtime=1x ./bench/
//
// Custom metrics (b.ReportMetric) carry the figures that are not per-op
// times: listings, spawned processes, RSS, goroutines, payload copies.

// BenchmarkCall is measurement 1: an echo tools/call on a stdio server
// (the go-sdk fixture at 2026-07-28 and at 2025-11-25; server-everything,
// at 2025-11-25, when setup.sh installed it) through each contender
// (direct client, floor relay, sidecar process), all speaking the same
// version to it, with 1, 8 and 64 calls in flight.
func BenchmarkCall(b *testing.B) {
	for _, kind := range callKinds {
		b.Run("server="+kind, func(b *testing.B) {
			p := setupCallPaths(b, kind)
			for _, conc := range []int{1, 8, 64} {
				for _, via := range contenderNames {
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
		})
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
			warmCache(b, servers, lazyFeatures(false), cacheDir)
			for _, lazy := range []bool{true, false} {
				name := "startup=eager"
				if lazy {
					name = "startup=lazy"
				}
				b.Run(name, func(b *testing.B) {
					var total time.Duration
					spawned := 0
					for range b.N {
						d, n, _ := lazyRound(b, servers, lazyFeatures(false), cacheDir, lazy)
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
// argument through each contender. peak-RSS-copies is how far the process
// between host and server (floor relay, sidecar) rises above its resting
// RSS during one call, in payload sizes.
func BenchmarkPayload(b *testing.B) {
	p := setupPayload(b)
	for _, dir := range []string{"result", "argument"} {
		_, _, size, _ := payloadCall(dir)
		for _, via := range contenderNames {
			b.Run(fmt.Sprintf("dir=%s/via=%s", dir, via), func(b *testing.B) {
				op := p.op(dir, via)
				b.SetBytes(int64(size))
				for b.Loop() {
					if err := op(); err != nil {
						b.Fatal(err)
					}
				}
				if via != "direct" {
					b.ReportMetric(peakCopies(b, dir, via), "peak-RSS-copies")
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
