package bench

import (
	"math"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// estimateError is catalog.EstimateTokens against real BPE counts: the
// mean and largest relative error per tool, and the relative error of the
// total.
type estimateError struct {
	mean, worst, total float64
}

// tokenErrors compares the estimate with the o200k_base and cl100k_base
// counts of corpus/tokens.json, full and summary forms together.
func tokenErrors(tb testing.TB) map[string]estimateError {
	_, tools := loadCorpus(tb)
	counts := loadCorpusTokens(tb)
	if len(counts) != len(tools) {
		tb.Fatalf("%s has %d tools, the corpus %d: run bench/corpus/capture.sh", corpusTokensFile, len(counts), len(tools))
	}
	out := map[string]estimateError{}
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		var sumAbs, worst, est, real float64
		n := 0
		for i := range tools {
			c := counts[i]
			full, summary := toolForms(tb, &tools[i])
			if c.Server != tools[i].Server || c.Tool != tools[i].Name || c.FullBytes != len(full) || c.SummaryBytes != len(summary) {
				tb.Fatalf("%s: %s/%s was counted on other bytes: run bench/corpus/capture.sh", corpusTokensFile, c.Server, c.Tool)
			}
			pairs := [][2]int{{catalog.EstimateTokens(full), c.FullO200k}, {catalog.EstimateTokens(summary), c.SummaryO200k}}
			if enc == "cl100k_base" {
				pairs[0][1], pairs[1][1] = c.FullCl100k, c.SummaryCl100k
			}
			for _, p := range pairs {
				e := math.Abs(float64(p[0]-p[1])) / float64(p[1])
				sumAbs += e
				worst = max(worst, e)
				est += float64(p[0])
				real += float64(p[1])
				n++
			}
		}
		out[enc] = estimateError{mean: sumAbs / float64(n), worst: worst, total: (est - real) / real}
	}
	return out
}

// TestTokenEstimate keeps the estimate calibrated: within 10 % per tool on
// average and 3 % on a whole catalog, for both encodings.
func TestTokenEstimate(t *testing.T) {
	for enc, e := range tokenErrors(t) {
		t.Logf("%s: per tool mean error %.1f %%, worst %.1f %%; whole corpus %+.1f %%", enc, 100*e.mean, 100*e.worst, 100*e.total)
		if e.mean > 0.10 || math.Abs(e.total) > 0.03 {
			t.Errorf("%s: estimate off by %.1f %% per tool on average, %+.1f %% in total", enc, 100*e.mean, 100*e.total)
		}
	}
}
