package bench

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// tokenSample is one form (full or summary) of one corpus tool: its
// features and its real token counts.
type tokenSample struct {
	server string
	f      catalog.TokenFeatures
	real   map[string]int // encoding to count
}

var tokenEncodings = []string{"o200k_base", "cl100k_base"}

// tokenSamples are the full and summary forms of every corpus tool with
// the counts of corpus/tokens.json.
func tokenSamples(tb testing.TB) []tokenSample {
	_, tools := loadCorpus(tb)
	counts := loadCorpusTokens(tb)
	if len(counts) != len(tools) {
		tb.Fatalf("%s has %d tools, the corpus %d: run bench/corpus/capture.sh", corpusTokensFile, len(counts), len(tools))
	}
	var out []tokenSample
	for i := range tools {
		c := counts[i]
		full, summary := toolForms(tb, &tools[i])
		if c.Server != tools[i].Server || c.Tool != tools[i].Name || c.FullBytes != len(full) || c.SummaryBytes != len(summary) {
			tb.Fatalf("%s: %s/%s was counted on other bytes: run bench/corpus/capture.sh", corpusTokensFile, c.Server, c.Tool)
		}
		out = append(out,
			tokenSample{tools[i].Server, catalog.CountTokenFeatures(full), map[string]int{"o200k_base": c.FullO200k, "cl100k_base": c.FullCl100k}},
			tokenSample{tools[i].Server, catalog.CountTokenFeatures(summary), map[string]int{"o200k_base": c.SummaryO200k, "cl100k_base": c.SummaryCl100k}})
	}
	return out
}

// estimateError is catalog.EstimateTokens against real BPE counts: the
// mean and largest relative error per tool form, the relative error of
// the total, and the largest relative error of one server's total.
type estimateError struct {
	mean, worst, total, worstServer float64
}

// estimateErrors compares estimates (one per sample) with the real counts
// of one encoding.
func estimateErrors(samples []tokenSample, est []int, enc string) estimateError {
	var e estimateError
	var sumEst, sumReal float64
	perServer := map[string][2]float64{}
	for i, s := range samples {
		real := float64(s.real[enc])
		rel := math.Abs(float64(est[i])-real) / real
		e.mean += rel
		e.worst = max(e.worst, rel)
		sumEst += float64(est[i])
		sumReal += real
		ps := perServer[s.server]
		perServer[s.server] = [2]float64{ps[0] + float64(est[i]), ps[1] + real}
	}
	e.mean /= float64(len(samples))
	e.total = (sumEst - sumReal) / sumReal
	for _, ps := range perServer {
		e.worstServer = max(e.worstServer, math.Abs(ps[0]-ps[1])/ps[1])
	}
	return e
}

// tokenErrors is the error of catalog.EstimateTokens on the corpus, per
// encoding: in sample, since its weights were fitted to these counts.
func tokenErrors(tb testing.TB) map[string]estimateError {
	samples := tokenSamples(tb)
	est := make([]int, len(samples))
	w := catalog.EstimateWeights()
	for i, s := range samples {
		est[i] = w.Estimate(s.f)
	}
	out := map[string]estimateError{}
	for _, enc := range tokenEncodings {
		out[enc] = estimateErrors(samples, est, enc)
	}
	return out
}

// tokenErrorsLeaveOneServerOut estimates each server's tools with weights
// fitted (as TestTokenWeightsFit fits them) to the other servers' tools
// only: the error to expect on a server the fit has not seen.
func tokenErrorsLeaveOneServerOut(tb testing.TB) map[string]estimateError {
	samples := tokenSamples(tb)
	est := make([]int, len(samples))
	var servers []string
	for _, s := range samples {
		if !slices.Contains(servers, s.server) {
			servers = append(servers, s.server)
		}
	}
	for _, server := range servers {
		var train []tokenSample
		for _, s := range samples {
			if s.server != server {
				train = append(train, s)
			}
		}
		w, err := fitTokenWeights(train)
		if err != nil {
			tb.Fatalf("fit without %s: %v", server, err)
		}
		w = roundWeights(w)
		for i, s := range samples {
			if s.server == server {
				est[i] = w.Estimate(s.f)
			}
		}
	}
	out := map[string]estimateError{}
	for _, enc := range tokenEncodings {
		out[enc] = estimateErrors(samples, est, enc)
	}
	return out
}

// fitOtherWeight is the weight of a non-ASCII character, set rather than
// fitted: the corpus has 75 of them in 191 tools, too few to fit (a fit
// gives 5 to 8, driven by a handful of emoji), and a BPE tokenizer makes
// one to three tokens of most.
const fitOtherWeight = 2

// fitTokenWeights fits the ASCII, word and punctuation weights of the
// estimate by weighted least squares: it minimises the sum, over both
// encodings' counts of every sample, of the squared relative error
// ((estimate - real) / real)^2, with the non-ASCII weight held at
// fitOtherWeight. Relative error is what the estimate is judged by, and
// weighing it (rather than absolute error, which the largest tools would
// dominate) also fits small tools and summary forms.
func fitTokenWeights(samples []tokenSample) (catalog.TokenWeights, error) {
	// Normal equations A x = v of the three free weights.
	var a [3][3]float64
	var v [3]float64
	for _, s := range samples {
		x := [3]float64{float64(s.f.ASCII), float64(s.f.Words), float64(s.f.Punct)}
		for _, enc := range tokenEncodings {
			y := float64(s.real[enc])
			if y <= 0 {
				continue
			}
			wt := 1 / (y * y)
			r := y - fitOtherWeight*float64(s.f.Other)
			for i := range x {
				for j := range x {
					a[i][j] += wt * x[i] * x[j]
				}
				v[i] += wt * x[i] * r
			}
		}
	}
	x, err := solve3(a, v)
	if err != nil {
		return catalog.TokenWeights{}, err
	}
	return catalog.TokenWeights{ASCII: x[0], Word: x[1], Punct: x[2], Other: fitOtherWeight}, nil
}

// solve3 solves a 3x3 linear system by Gaussian elimination with partial
// pivoting.
func solve3(a [3][3]float64, v [3]float64) ([3]float64, error) {
	for c := range 3 {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return [3]float64{}, fmt.Errorf("singular system (column %d): the samples do not determine the weights", c)
		}
		a[c], a[p] = a[p], a[c]
		v[c], v[p] = v[p], v[c]
		for r := range 3 {
			if r == c {
				continue
			}
			f := a[r][c] / a[c][c]
			for k := c; k < 3; k++ {
				a[r][k] -= f * a[c][k]
			}
			v[r] -= f * v[c]
		}
	}
	return [3]float64{v[0] / a[0][0], v[1] / a[1][1], v[2] / a[2][2]}, nil
}

// roundWeights rounds to two places, as catalog.EstimateWeights has them.
func roundWeights(w catalog.TokenWeights) catalog.TokenWeights {
	r := func(x float64) float64 { return math.Round(x*100) / 100 }
	return catalog.TokenWeights{ASCII: r(w.ASCII), Word: r(w.Word), Punct: r(w.Punct), Other: r(w.Other)}
}

// TestTokenWeightsFit re-derives the weights of catalog.EstimateTokens
// from corpus/tokens.json and prints them (-v): the committed weights must
// be the fit's, rounded to two places. After capture.sh refreshes the
// corpus, copy the printed weights into catalog.EstimateWeights.
//
//	go test -run TestTokenWeightsFit -v ./bench/
func TestTokenWeightsFit(t *testing.T) {
	w, err := fitTokenWeights(tokenSamples(t))
	if err != nil {
		t.Fatal(err)
	}
	got := roundWeights(w)
	t.Logf("fitted: ASCII %.4f, Word %.4f, Punct %.4f, Other %g (held)", w.ASCII, w.Word, w.Punct, w.Other)
	t.Logf("rounded: catalog.TokenWeights{ASCII: %g, Word: %g, Punct: %g, Other: %g}", got.ASCII, got.Word, got.Punct, got.Other)
	if want := catalog.EstimateWeights(); got != want {
		t.Errorf("catalog.EstimateWeights() = %+v, but the fit to %s gives %+v: update catalog/tokens.go (and the figures of bench/README.md)", want, corpusTokensFile, got)
	}
}

// TestFitTokenWeights: the fit recovers the weights of counts made by a
// known linear rule, and refuses samples that cannot determine them.
func TestFitTokenWeights(t *testing.T) {
	want := catalog.TokenWeights{ASCII: 0.2, Word: 0.5, Punct: 0.3, Other: fitOtherWeight}
	var samples []tokenSample
	for _, f := range []catalog.TokenFeatures{
		{ASCII: 100, Words: 10, Punct: 30},
		{ASCII: 50, Words: 12, Punct: 5, Other: 1},
		{ASCII: 400, Words: 30, Punct: 150},
		{ASCII: 80, Words: 20, Punct: 10, Other: 2},
	} {
		y := want.ASCII*float64(f.ASCII) + want.Word*float64(f.Words) + want.Punct*float64(f.Punct) + want.Other*float64(f.Other)
		// Real counts are whole numbers: ten times the features make them so.
		f = catalog.TokenFeatures{ASCII: f.ASCII * 10, Words: f.Words * 10, Punct: f.Punct * 10, Other: f.Other * 10}
		samples = append(samples, tokenSample{f: f, real: map[string]int{"o200k_base": int(math.Round(10 * y)), "cl100k_base": int(math.Round(10 * y))}})
	}
	got, err := fitTokenWeights(samples)
	if err != nil {
		t.Fatal(err)
	}
	if roundWeights(got) != want {
		t.Errorf("fit %+v, want %+v", got, want)
	}
	if _, err := fitTokenWeights(samples[:1]); err == nil {
		t.Error("one sample determined three weights")
	}
}

// TestTokenEstimate keeps the estimate calibrated: within 10 % per tool on
// average and 3 % on a whole catalog, for both encodings. It logs the
// leave-one-server-out error too (-v).
func TestTokenEstimate(t *testing.T) {
	errs, loso := tokenErrors(t), tokenErrorsLeaveOneServerOut(t)
	for _, enc := range tokenEncodings {
		e, l := errs[enc], loso[enc]
		t.Logf("%s: per tool mean error %.1f %%, worst %.1f %%; whole corpus %+.1f %%; worst server %.1f %%", enc, 100*e.mean, 100*e.worst, 100*e.total, 100*e.worstServer)
		t.Logf("%s, each server fitted without it: per tool mean error %.1f %%, worst %.1f %%; whole corpus %+.1f %%; worst server %.1f %%", enc, 100*l.mean, 100*l.worst, 100*l.total, 100*l.worstServer)
		if e.mean > 0.10 || math.Abs(e.total) > 0.03 {
			t.Errorf("%s: estimate off by %.1f %% per tool on average, %+.1f %% in total", enc, 100*e.mean, 100*e.total)
		}
	}
}
