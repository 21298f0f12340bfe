// Package bench measures mcp-sidecar against its physical limit: every
// measurement runs the sidecar path and its baseline (for the call path the
// floor relay of floorrelay/ and a direct go-sdk client; else a direct
// client, or the host reading the same bytes from a replayer) side by side
// in one run.
//
// The code lives in test files, so that it can re-execute the test binary as
// MCP servers and as a sidecar process. Three entry points:
//
//	go test -run '^$' -bench . -benchtime=1x ./bench/              # CI smoke, one iteration each
//	MCP_SIDECAR_BENCH_REPORT=1 go test -run TestReport -v -timeout 30m ./bench/  # the table of the last full run
//	MCP_SIDECAR_SEARCH_REPORT=1 go test -run TestSearchReport -v ./bench/       # tool search
//
// The tool search figures use the real catalogs of corpus/ (captured by
// corpus/capture.sh) with their queries; TestSearchQuality, TestSynonymsHelp,
// TestTokenEstimate and TestTokenWeightsFit check them in every test run.
//
// README.md in this directory says how the figures are made and holds them
// all: the table of the last full run, the call path and tool search.
package bench
