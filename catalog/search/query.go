package search

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// DefaultLimit is the number of results when Options.Limit is 0.
const DefaultLimit = 5

// MaxRegexBytes bounds a /regex/ query. Go's regexp runs in linear time,
// so a long pattern is no danger to the process, but it is no search a
// model would write either.
const MaxRegexBytes = 1024

// Options restrict a search.
type Options struct {
	// Limit is the most results returned (DefaultLimit when 0). A
	// select: query returns every tool it names, whatever the limit.
	Limit int
	// Servers, when not nil, restricts results to these servers.
	Servers []string
}

// Result is one tool found.
type Result struct {
	Name   string  // qualified name
	Server string  // server name
	Tool   string  // raw name
	Score  float64 // higher is better; comparable within one search only
	// Description is the first sentence of the tool's description.
	Description string
}

// ErrEmptyQuery is returned for a query with nothing to search for.
var ErrEmptyQuery = errors.New("empty query")

// Search runs one query. It has three forms:
//
//   - "select:a,b" returns the tools these names name (see Select), in the
//     order given; names that name no tool are skipped;
//   - "/pattern/" returns the tools whose name, raw name or title (first)
//     or description (after) match the regular expression (Go syntax,
//     case-insensitive);
//   - anything else is free text, ranked with BM25F over the tool's name,
//     server, title, description and parameters.
//
// Within one score, tools keep catalog order.
func (ix *Index) Search(query string, opt Options) ([]Result, error) {
	query = strings.TrimSpace(query)
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	allow := opt.allow()
	if names, ok := SelectNames(query); ok {
		if len(names) == 0 {
			return nil, fmt.Errorf("select: names no tool: %w", ErrEmptyQuery)
		}
		found, _ := ix.Select(names, opt)
		return found, nil
	}
	switch {
	case query == "":
		return nil, ErrEmptyQuery
	case len(query) >= 2 && query[0] == '/' && query[len(query)-1] == '/':
		return ix.regex(query[1:len(query)-1], limit, allow)
	default:
		return ix.text(query, limit, allow)
	}
}

// allow is the servers filter of opt.
func (opt Options) allow() func(server string) bool {
	if opt.Servers == nil {
		return func(string) bool { return true }
	}
	return func(server string) bool { return slices.Contains(opt.Servers, server) }
}

// SelectNames reports whether query is a select: query and returns its
// names: split at commas, trimmed, each once, empty ones left out.
func SelectNames(query string) (names []string, ok bool) {
	list, ok := strings.CutPrefix(strings.TrimSpace(query), "select:")
	if !ok {
		return nil, false
	}
	for n := range strings.SplitSeq(list, ",") {
		if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, true
}

// Select returns the tools that names name, in the order of the names,
// each tool once, whatever opt.Limit: a name is a tool's qualified name,
// or else a raw name (the server's own name of a tool), which names every
// tool of that raw name (of every server, in catalog order). missing are
// the names that name no tool of the servers opt allows.
func (ix *Index) Select(names []string, opt Options) (found []Result, missing []string) {
	allow := opt.allow()
	type at struct{ seg, doc int }
	qualified := make(map[string]at, len(names))
	raw := make(map[string][]at, len(names))
	for si, s := range ix.segs {
		if !allow(s.server) {
			continue
		}
		for i := range s.docs {
			if n := ix.names[si][i]; slices.Contains(names, n) {
				qualified[n] = at{si, i}
			}
			if n := s.docs[i].tool; slices.Contains(names, n) {
				raw[n] = append(raw[n], at{si, i})
			}
		}
	}
	found = []Result{}
	seen := map[at]bool{}
	add := func(a at) {
		if !seen[a] {
			seen[a] = true
			found = append(found, ix.result(a.seg, a.doc, 1))
		}
	}
	for _, n := range names {
		if a, ok := qualified[n]; ok {
			add(a)
			continue
		}
		if as := raw[n]; len(as) > 0 {
			for _, a := range as {
				add(a)
			}
			continue
		}
		missing = append(missing, n)
	}
	return found, missing
}

func (ix *Index) regex(pattern string, limit int, allow func(string) bool) ([]Result, error) {
	if pattern == "" {
		return nil, fmt.Errorf("empty regular expression: %w", ErrEmptyQuery)
	}
	if len(pattern) > MaxRegexBytes {
		return nil, fmt.Errorf("regular expression of %d bytes; at most %d", len(pattern), MaxRegexBytes)
	}
	re, err := regexp.Compile("(?i)" + pattern)
	if err != nil {
		return nil, fmt.Errorf("bad regular expression: %w", err)
	}
	lit := requiredLiteral(pattern)
	// Name matches (score 1) rank before description matches (0.5), each
	// in catalog order, so each pass can stop once the results are full:
	// a common pattern does not scan every description of a large catalog.
	var out []Result
	named := map[*doc]bool{}
	for si, s := range ix.segs {
		if !allow(s.server) {
			continue
		}
		for i := range s.docs {
			if d := &s.docs[i]; d.nameMatches(ix.names[si][i], re, lit) {
				named[d] = true
				if out = append(out, ix.result(si, i, 1)); len(out) == limit {
					return out, nil
				}
			}
		}
	}
	for si, s := range ix.segs {
		if !allow(s.server) {
			continue
		}
		for i := range s.docs {
			d := &s.docs[i]
			if named[d] || (lit != "" && d.foldSafe && !containsFold(d.desc, lit)) {
				continue
			}
			if re.MatchString(d.desc) {
				if out = append(out, ix.result(si, i, 0.5)); len(out) == limit {
					return out, nil
				}
			}
		}
	}
	if out == nil {
		out = []Result{}
	}
	return out, nil
}

// nameMatches reports whether re matches the tool's qualified name, raw
// name or title. lit, if set, is a literal every match contains.
func (d *doc) nameMatches(qualified string, re *regexp.Regexp, lit string) bool {
	// The raw name is usually the end of the qualified one; it is matched
	// apart for a sanitised or shortened name, and for patterns anchored
	// at its start.
	for _, s := range []string{qualified, d.tool, d.title} {
		if s == "" || (lit != "" && foldSafe(s) && !containsFold(s, lit)) {
			continue
		}
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// hit is a scored tool: segment, tool number, and its place in the
// catalog.
type hit struct {
	seg, doc, pos int
	score         float64
}

// before reports whether x ranks before y: a higher score, or the same
// score and earlier in the catalog.
func (x hit) before(y hit) bool {
	return x.score > y.score || (x.score == y.score && x.pos < y.pos)
}

// best keeps the limit best hits offered, in a heap whose root is the
// worst kept: a search costs O(n log limit), not a sort of every tool that
// matched.
type best struct {
	limit int
	heap  []hit
}

func (b *best) offer(x hit) {
	h := b.heap
	if len(h) < b.limit {
		h = append(h, x)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h[p].before(h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		b.heap = h
		return
	}
	if !x.before(h[0]) {
		return
	}
	h[0] = x
	for i := 0; ; {
		w := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(h) && h[w].before(h[c]) {
				w = c
			}
		}
		if w == i {
			return
		}
		h[w], h[i] = h[i], h[w]
		i = w
	}
}

// results returns the hits kept, best first.
func (ix *Index) results(b *best) []Result {
	slices.SortFunc(b.heap, func(x, y hit) int {
		if x.before(y) {
			return -1
		}
		return 1
	})
	out := make([]Result, len(b.heap))
	for i, h := range b.heap {
		out[i] = ix.result(h.seg, h.doc, h.score)
	}
	return out
}

// result is tool number i of segment si as a result.
func (ix *Index) result(si, i int, score float64) Result {
	s := ix.segs[si]
	d := &s.docs[i]
	return Result{Name: ix.names[si][i], Server: s.server, Tool: d.tool, Score: score, Description: firstSentence(d.desc)}
}

// queryTerm is one term of a free-text query with its weight (1 for the
// query's own words, less for synonyms).
type queryTerm struct {
	term   string
	weight float64
	idf    float64
	// word is the query word this term came from: a word and its
	// synonyms count once towards name coverage.
	word int
	// own marks the query's own words (not synonyms, compounds or
	// written forms), whose idf makes the scale of name coverage.
	own bool
}

// text ranks with BM25F: for each query term, a tool's weighted,
// length-normalised frequency over its fields is saturated once (k1) and
// multiplied by the term's idf.
func (ix *Index) text(query string, limit int, allow func(string) bool) ([]Result, error) {
	r := ix.rank
	weights := r.Weights.array()
	qs := ix.queryTerms(query)
	if len(qs) == 0 {
		return []Result{}, nil
	}
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = float64(ix.sumLen[f]) / float64(max(ix.docs, 1))
		if avg[f] == 0 {
			avg[f] = 1
		}
	}
	words := 0
	totalIDF := 0.0
	for i := range qs {
		q := &qs[i]
		df := 0
		for _, s := range ix.segs {
			df += len(s.postings[q.term])
		}
		q.idf = math.Log(1 + (float64(ix.docs)-float64(df)+0.5)/(float64(df)+0.5))
		words = max(words, q.word+1)
		if q.own && df > 0 {
			totalIDF += q.idf
		}
	}
	top := &best{limit: limit}
	var scores []float64
	var named []uint64 // per tool, a bit per query word found in its name fields
	for si, s := range ix.segs {
		if !allow(s.server) {
			continue
		}
		scores = slices.Grow(scores[:0], len(s.docs))[:len(s.docs)]
		clear(scores)
		named = slices.Grow(named[:0], len(s.docs))[:len(s.docs)]
		clear(named)
		for _, q := range qs {
			for _, p := range s.postings[q.term] {
				d := &s.docs[p.doc]
				tf := 0.0
				for f := range numFields {
					if p.tf[f] == 0 {
						continue
					}
					norm := 1 - r.B + r.B*float64(d.lens[f])/avg[f]
					tf += weights[f] * float64(p.tf[f]) / norm
				}
				scores[p.doc] += q.weight * q.idf * tf / (r.K1 + tf)
				if p.tf[fieldName] > 0 || p.tf[fieldServer] > 0 || p.tf[fieldTitle] > 0 {
					named[p.doc] |= 1 << (q.word % 64)
				}
			}
		}
		for i, sc := range scores {
			if sc <= 0 {
				continue
			}
			if r.NameCoverage > 0 && named[i] != 0 {
				sc += r.NameCoverage * totalIDF * coverage(named[i], words)
			}
			top.offer(hit{seg: si, doc: i, pos: ix.bases[si] + i, score: sc})
		}
	}
	return ix.results(top), nil
}

// coverage is the share of a query's words (at most 64 counted) set in
// bits.
func coverage(bits uint64, words int) float64 {
	n := 0
	for ; bits != 0; bits &= bits - 1 {
		n++
	}
	return float64(n) / float64(min(words, 64))
}

// queryTerms analyses a free-text query as tools are analysed, merges
// repeated terms, and adds synonyms.
func (ix *Index) queryTerms(query string) []queryTerm {
	r := ix.rank
	var qs []queryTerm
	seen := map[string]int{}
	add := func(term string, weight float64, word int, own bool) {
		if i, ok := seen[term]; ok {
			qs[i].weight = max(qs[i].weight, weight)
			qs[i].own = qs[i].own || own
			return
		}
		seen[term] = len(qs)
		qs = append(qs, queryTerm{term: term, weight: weight, word: word, own: own})
	}
	raw := terms(nil, query, false)
	for w, word := range raw {
		// "roll back" also searches for "rollback", "drop down" for
		// "dropdown": catalogs write many compounds as one word.
		if w > 0 && r.Compounds > 0 {
			joined := raw[w-1] + word
			if r.Stem {
				joined = stemWord(joined)
			}
			add(joined, r.Compounds, w, false)
		}
		t := word
		if r.Stem {
			t = stemWord(word)
			if r.Exact > 0 && t != word {
				add(exactPrefix+word, r.Exact, w, false)
			}
		}
		add(t, 1, w, true)
		for _, syn := range r.Synonyms[word] {
			for _, st := range terms(nil, syn, r.Stem) {
				add(st, r.SynonymWeight, w, false)
			}
		}
	}
	return qs
}
