package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
)

// searchReportEnv turns TestSearchReport on; its value scales the
// repetitions like MCP_SIDECAR_BENCH_REPORT.
const searchReportEnv = "MCP_SIDECAR_SEARCH_REPORT"

// TestSearchReport prints the tool search figures as Markdown for
// bench/README.md (and writes them to MCP_SIDECAR_BENCH_REPORT_OUT when
// set): search quality against plain BM25, the ablations, speed and memory
// at 1k, 10k and 50k tools, the context a catalog costs with and without
// schemas, and the token estimate's error.
//
//	MCP_SIDECAR_SEARCH_REPORT=1 go test -run TestSearchReport -v -timeout 30m ./bench/
func TestSearchReport(t *testing.T) {
	v := os.Getenv(searchReportEnv)
	if v == "" {
		t.Skipf("set %s=1 to run the search measurements (about 30 s on an idle machine, more under load)", searchReportEnv)
	}
	scale, err := strconv.ParseFloat(v, 64)
	if err != nil || scale <= 0 {
		t.Fatalf("%s=%q: want a positive number (repetition scale)", searchReportEnv, v)
	}
	reps := func(n int) int { return max(int(float64(n)*scale), 3) }
	var out bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }
	p("Machine: %s. Command: `%s=%s go test -run TestSearchReport -v -timeout 30m ./bench/`.\n\n", machine(), searchReportEnv, v)

	// Quality.
	c := loadSearchCorpus(t)
	ours := indexRanker(t, c.tools, search.DefaultRanking())
	base := newBM25(c.tools).rank
	p("**Quality** on %d real tools of %d npm servers (`bench/corpus`), %d queries:\n\n", len(c.tools), countServers(c.tools), len(c.queries))
	p("| queries | n | tools/search R@1 | R@5 | MRR | plain BM25 R@1 | R@5 | MRR | goal (R@1, MRR higher; R@5 not lower) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, set := range []string{"dev", "heldout", "test", "all"} {
		qs := c.subset(set)
		o, b := evaluate(qs, c.answers, ours), evaluate(qs, c.answers, base)
		p("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s |\n", set, o.n, o.recall1, o.recall5, o.mrr, b.recall1, b.recall5, b.mrr,
			verdict(o.recall1 > b.recall1 && o.mrr > b.mrr && o.recall5 >= b.recall5))
	}
	p("\n**Differences** (tools/search minus plain BM25, query by query: the mean, its 95 %% paired bootstrap interval over queries (%d resamples, fixed seed) and one-sided p; the queries where one ranks better, and the two-sided sign test):\n\n", bootstrapResamples)
	p("| queries | figure | difference | 95 %% interval | bootstrap p | better / worse (queries) | sign test p |\n|---|---|---|---|---|---|---|\n")
	for _, set := range []string{"dev", "heldout", "test", "all"} {
		qs := c.subset(set)
		o, b := evaluate(qs, c.answers, ours), evaluate(qs, c.answers, base)
		for _, m := range pairedFigures {
			d := comparePaired(o.perQuery, b.perQuery, m.get)
			p("| %s | %s | %+.3f | [%+.3f, %+.3f] | %s | %d / %d | %s |\n", set, m.name, d.mean, d.lo, d.hi, pValue(d.bootP), d.wins, d.losses, pValue(d.signP))
		}
	}
	p("\n**Ablations** (each row is the default ranking without one part; R@1 / R@5 / MRR):\n\n| ranking | dev | heldout | test | all |\n|---|---|---|---|---|\n")
	for _, a := range searchAblations() {
		rank := indexRanker(t, c.tools, a.r)
		p("| %s |", a.name)
		for _, set := range []string{"dev", "heldout", "test", "all"} {
			q := evaluate(c.subset(set), c.answers, rank)
			p(" %.3f / %.3f / %.3f |", q.recall1, q.recall5, q.mrr)
		}
		p("\n")
	}

	p("\n**Synonym entries** (each taken out of the table alone; the queries whose figures it raises and lowers, and the differences over all queries it makes):\n\n")
	p("| word | expands to | helps queries | hurts queries | R@1 | R@5 | MRR |\n|---|---|---|---|---|---|---|\n")
	table := search.DefaultRanking().Synonyms
	for _, e := range synonymEffects(t, c) {
		p("| %s | %s | %s | %s | %+.3f | %+.3f | %+.3f |\n", e.word, strings.Join(table[e.word], ", "), ids(e.helped), ids(e.hurt), e.dR1, e.dR5, e.dMRR)
	}

	// Speed and memory.
	t.Log("speed")
	queries := searchQueries(t)
	p("\n**Speed and memory** (synthetic catalogs made of the corpus tools, servers of 100 tools, 500 at 50k; medians):\n\n")
	p("| tools | free-text query (p99) | plain BM25 scan (baseline) | ratio | /regex/ on names; matching nothing | update after 100 tools of one server changed | full build (baseline) | index memory per tool | goal |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, shape := range searchSizes {
		tools := syntheticCatalog(t, shape, 0)
		ix := search.New(search.DefaultRanking()).Update(tools)
		n := reps(map[int]int{1000: 30, 10000: 10, 50000: 3}[shape.tools()])
		q := timeEach(n*len(queries), func(i int) { ix.Search(queries[i%len(queries)], search.Options{}) })
		bm := newBM25(tools)
		bq := timeEach(max(n*len(queries)/10, len(queries)), func(i int) { bm.rank(queries[i%len(queries)], search.DefaultLimit) })
		rn := timeEach(n*10, func(int) { ix.Search("/^mcp__srv0[0-9]+__browser_/", search.Options{}) })
		rx := timeEach(max(n, 3), func(int) { ix.Search("/no such tool anywhere/", search.Options{}) })
		ch := newIndexChange(t, shape)
		up := timeEach(n*10, func(int) { ch.ix.Update(ch.after) })
		build := timeEach(max(n/3, 3), func(int) { search.New(search.DefaultRanking()).Update(tools) })
		mem := indexBytesPerTool(tools)
		ratio := float64(median(bq)) / float64(median(q))
		goal := ""
		switch shape.tools() {
		case 10000:
			goal = fmt.Sprintf("query < 1 ms: %s; ", verdict(median(q) < time.Millisecond))
		}
		goal += fmt.Sprintf("update < 5 ms: %s", verdict(median(up) < 5*time.Millisecond))
		p("| %d | %s (%s) | %s | %.0fx faster | %s; %s | %s | %s | %.1f KiB | %s |\n", shape.tools(), us(median(q)), us(quantile(q, 0.99)),
			us(median(bq)), ratio, us(median(rn)), us(median(rx)), us(median(up)), us(median(build)), mem/1024, goal)
	}

	// Context.
	t.Log("context")
	counts := loadCorpusTokens(t)
	var fullReal, sumReal, fullBytes, sumBytes, fullEst, sumEst int
	for i := range c.tools {
		full, summary := toolForms(t, &c.tools[i])
		fullBytes += len(full)
		sumBytes += len(summary)
		fullEst += catalog.EstimateTokens(full)
		sumEst += catalog.EstimateTokens(summary)
		fullReal += counts[i].FullO200k
		sumReal += counts[i].SummaryO200k
	}
	searchTokens, getTokens := searchTurnTokens(t, c)
	p("\n**Context** of the real corpus (%d tools), o200k_base tokens counted by js-tiktoken (estimate in brackets):\n\n", len(c.tools))
	p("| what the model is given | bytes | tokens |\n|---|---|---|\n")
	p("| the whole catalog, tools/list | %d | %d (%d) |\n", fullBytes, fullReal, fullEst)
	p("| every tool without schemas, tools/list `schemas: false` | %d | %d (%d): %.0f %% less |\n", sumBytes, sumReal, sumEst, 100*(1-float64(sumReal)/float64(fullReal)))
	p("| one tools/search result (5 tools), median over the queries | | (%d) |\n", searchTokens)
	p("| tools/get of those 5 tools, median | | (%d) |\n", getTokens)

	// Token estimate.
	p("\n**Token estimate** (`catalog.EstimateTokens`) against js-tiktoken 1.0.21 on the %d tools, full and summary forms; in sample (the weights were fitted to these counts), and with each server's tools estimated by weights fitted to the other servers only:\n\n", len(c.tools))
	p("| encoding | weights | mean error per tool | worst tool | whole catalog | worst server's total |\n|---|---|---|---|---|---|\n")
	errs, loso := tokenErrors(t), tokenErrorsLeaveOneServerOut(t)
	for _, enc := range tokenEncodings {
		for _, row := range []struct {
			name string
			e    estimateError
		}{{"fitted to all servers (in sample)", errs[enc]}, {"fitted without the server (leave one out)", loso[enc]}} {
			e := row.e
			p("| %s | %s | %.1f %% | %.1f %% | %+.1f %% | %.1f %% |\n", enc, row.name, 100*e.mean, 100*e.worst, 100*e.total, 100*e.worstServer)
		}
	}
	var bytesErr float64
	var real int
	for _, tc := range counts {
		real += tc.FullO200k + tc.SummaryO200k
		bytesErr += float64(tc.FullBytes+tc.SummaryBytes) / 4
	}
	p("| o200k_base | bytes/4 (the common rule of thumb) | | | %+.1f %% | |\n", 100*(bytesErr-float64(real))/float64(real))

	fmt.Println(out.String())
	if f := os.Getenv("MCP_SIDECAR_BENCH_REPORT_OUT"); f != "" {
		if err := os.WriteFile(f, out.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func countServers(tools []catalog.Tool) int {
	var names []string
	for _, t := range tools {
		if !slices.Contains(names, t.Server) {
			names = append(names, t.Server)
		}
	}
	return len(names)
}

// searchTurnTokens estimates the tokens a model reads in one search turn:
// a tools/search result of 5 tools, and the tools/get of those 5; medians
// over the corpus queries.
func searchTurnTokens(tb testing.TB, c *searchCorpus) (search_, get int) {
	ix := search.New(search.DefaultRanking()).Update(c.tools)
	byName := map[string]*catalog.Tool{}
	for i := range c.tools {
		byName[c.tools[i].Qualified] = &c.tools[i]
	}
	var s, g []float64
	for _, q := range c.queries {
		res, err := ix.Search(q.Query, search.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		type wireResult struct {
			Name        string  `json:"name"`
			Server      string  `json:"server"`
			Tool        string  `json:"tool"`
			Score       float64 `json:"score"`
			Description string  `json:"description"`
		}
		var wr []wireResult
		var tools []json.RawMessage
		for _, r := range res {
			wr = append(wr, wireResult(r))
			w, _ := byName[r.Name].WireJSON()
			tools = append(tools, w)
		}
		rb, _ := json.Marshal(map[string]any{"results": wr})
		gb, _ := json.Marshal(map[string]any{"tools": tools})
		s = append(s, float64(catalog.EstimateTokens(rb)))
		g = append(g, float64(catalog.EstimateTokens(gb)))
	}
	return int(medianF(s)), int(medianF(g))
}

// ids lists query ids for a table cell.
func ids(list []int) string {
	if len(list) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, id := range list {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprint(&b, id)
	}
	return b.String()
}

func us(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d.Nanoseconds())/1000)
	}
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}
