package search

import (
	"encoding/json"
	"maps"
	"math"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// field is a part of a tool that is indexed on its own, with its own
// weight and length normalisation (BM25F).
type field uint8

const (
	fieldName      field = iota // the raw tool name, split into words
	fieldServer                 // the server name, the other half of the qualified name
	fieldTitle                  // title
	fieldDesc                   // description
	fieldParamName              // names of the input schema's top-level properties
	fieldParamDesc              // their descriptions
	numFields
)

// Ranking holds the parameters of the free-text ranking. The zero value is
// not useful; start from DefaultRanking.
type Ranking struct {
	// Weights multiply a term's frequency in each field (BM25F): a word
	// in a tool's name says more about it than the same word in a
	// parameter's description.
	Weights FieldWeights
	// K1 and B are BM25's term-frequency saturation and length
	// normalisation.
	K1, B float64
	// Stem maps inflections to one term on both sides (files, file).
	Stem bool
	// Synonyms maps a query word (lower-case, as a query is split, not
	// stemmed) to the phrases catalogs use for the same thing (folder:
	// directory), searched at SynonymWeight of the original; nil searches
	// no synonyms. DefaultRanking sets the built-in table (synonyms.go).
	Synonyms      map[string][]string
	SynonymWeight float64
	// NameCoverage is added, times the query's total idf weight, in
	// proportion to the share of the query's terms found in the tool's
	// name, server or title: a tool whose name says everything the query
	// asks for beats one whose long description mentions it in passing.
	NameCoverage float64
	// Exact, with Stem, also matches a query word in the form written
	// (workflows, not only workflow), at this weight: the form often tells
	// a tool that lists from one that gets one.
	Exact float64
	// Compounds also searches two adjacent query words written as one
	// (roll back: rollback), at this weight.
	Compounds float64
}

// exactPrefix marks the index terms of words in their written form.
const exactPrefix = "="

// DefaultRanking is the ranking tools/search uses. Its values were chosen
// on the development queries of bench/corpus/queries.json (the written-form
// weight on the development and held-out queries together); bench/README.md
// has the measurements, on test queries no choice was made on, and the
// ablations.
func DefaultRanking() Ranking {
	return Ranking{
		Weights: FieldWeights{
			Name:             1.5,
			Server:           1,
			Title:            1.5,
			Description:      1,
			ParamName:        0.5,
			ParamDescription: 1,
		},
		K1:            0.9,
		B:             0.75,
		Stem:          true,
		Exact:         0.2,
		Synonyms:      maps.Clone(synonyms),
		SynonymWeight: 0.5,
		NameCoverage:  0.5,
		Compounds:     1,
	}
}

// FieldWeights are the weights of a tool's fields in the ranking.
type FieldWeights struct {
	Name             float64 // the raw tool name
	Server           float64 // the server name
	Title            float64
	Description      float64
	ParamName        float64 // names of the input schema's top-level properties
	ParamDescription float64 // their descriptions
}

func (w FieldWeights) array() [numFields]float64 {
	return [numFields]float64{
		fieldName: w.Name, fieldServer: w.Server, fieldTitle: w.Title,
		fieldDesc: w.Description, fieldParamName: w.ParamName, fieldParamDesc: w.ParamDescription,
	}
}

// Index is a searchable snapshot of one qualified catalog. It is
// immutable, so any number of searches may run on it at once; Update
// returns a new Index and leaves the old one intact.
type Index struct {
	rank Ranking
	// shared, when set, is where the index takes its servers' analyses
	// from and publishes its own, each under key(server) (Shared.Update).
	shared *Shared
	key    func(server string) string
	segs   []*segment
	// names[i][j] is the qualified name of segs[i].docs[j] in this
	// catalog: a segment may be shared with catalogs that qualify the same
	// tools otherwise.
	names [][]string
	bases []int // bases[i] is the global number of segs[i]'s first tool
	docs  int
	// sumLen is the total length of each field over all tools, for BM25's
	// average field length.
	sumLen [numFields]int64
	// analysed is the number of tools analysed to make this index.
	analysed int
}

// segment is the analysis of one server's tools. Segments are immutable:
// they are shared between successive indexes as long as the server's tools
// stay the same, and through Shared between the indexes of catalogs that
// list the same tools.
type segment struct {
	server   string
	docs     []doc
	postings map[string][]posting
	sumLen   [numFields]int64
}

// doc is one tool. Its strings share the catalog's memory.
type doc struct {
	tool, title, desc string
	raw               json.RawMessage // to tell whether a tool changed
	lens              [numFields]uint16
	foldSafe          bool // foldSafe(desc)
}

// posting is one tool's occurrences of one term, per field.
type posting struct {
	doc uint32
	tf  [numFields]uint8
}

// New returns an empty index that ranks with r.
func New(r Ranking) *Index {
	return &Index{rank: r}
}

// Len is the number of tools in the index.
func (ix *Index) Len() int { return ix.docs }

// Analysed is the number of tools analysed to make this index from the
// one it was updated from: the tools that changed, or were analysed by no
// other index of its Shared. The other tools' analyses were taken over.
func (ix *Index) Analysed() int { return ix.analysed }

// Update returns the index of tools, a whole qualified catalog (every
// tool's Qualified set), grouped by server as a session catalog is. The
// analysis of each server whose tools are unchanged (same raw names, same
// bytes) is taken over from ix, and of a server whose tools changed only
// the changed tools are analysed, so an update costs in proportion to what
// changed. An index made by Shared.Update keeps taking analyses from, and
// giving them to, its Shared.
func (ix *Index) Update(tools []catalog.Tool) *Index {
	prev := make(map[string]int, len(ix.segs))
	for i, s := range ix.segs {
		prev[s.server] = i
	}
	next := &Index{rank: ix.rank, shared: ix.shared, key: ix.key}
	for start := 0; start < len(tools); {
		end := start + 1
		for end < len(tools) && tools[end].Server == tools[start].Server {
			end++
		}
		group := tools[start:end]
		var seg, old *segment
		var oldNames []string
		if i, ok := prev[group[0].Server]; ok {
			old, oldNames = ix.segs[i], ix.names[i]
		}
		n := 0
		switch {
		case old != nil && old.holds(group):
			seg = old
		case ix.shared != nil:
			seg, n = ix.shared.segment(ix.key(group[0].Server), old, group)
		case old != nil:
			seg, n = ix.rank.reanalyze(old, group)
		default:
			seg, n = ix.rank.analyze(group)
		}
		next.analysed += n
		next.bases = append(next.bases, next.docs)
		next.segs = append(next.segs, seg)
		next.names = append(next.names, qualifiedNames(group, oldNames))
		next.docs += len(seg.docs)
		for f := range numFields {
			next.sumLen[f] += seg.sumLen[f]
		}
		start = end
	}
	return next
}

// qualifiedNames returns the qualified names of tools: old when it holds
// them already, so an unchanged server costs no allocation.
func qualifiedNames(tools []catalog.Tool, old []string) []string {
	same := len(old) == len(tools)
	for i := 0; same && i < len(tools); i++ {
		same = old[i] == tools[i].Qualified
	}
	if same {
		return old
	}
	names := make([]string, len(tools))
	for i := range tools {
		names[i] = tools[i].Qualified
	}
	return names
}

// holds reports whether s is the analysis of exactly tools.
func (s *segment) holds(tools []catalog.Tool) bool {
	if len(s.docs) != len(tools) || s.server != tools[0].Server {
		return false
	}
	for i := range tools {
		d, t := &s.docs[i], &tools[i]
		if d.tool != t.Name || string(d.raw) != string(t.Raw) {
			return false
		}
	}
	return true
}

// analyze builds the segment of one server's tools; analysed is
// len(tools).
func (r Ranking) analyze(tools []catalog.Tool) (seg *segment, analysed int) {
	b := r.newBuilder(tools, map[string][]posting{})
	for i := range tools {
		b.add(i, &tools[i])
	}
	return b.finish(), len(tools)
}

// reanalyze builds the segment of one server's changed tools from its
// previous segment: tools whose raw name and bytes did not change keep
// their analysis (their postings are carried over and renumbered), so a
// change costs the analysis of the tools that changed (analysed counts
// them).
func (r Ranking) reanalyze(old *segment, tools []catalog.Tool) (seg *segment, analysed int) {
	oldAt := make(map[string]int, len(old.docs))
	for j := range old.docs {
		oldAt[old.docs[j].tool] = j
	}
	renumber := make([]int32, len(old.docs))
	for j := range renumber {
		renumber[j] = -1
	}
	kept := make([]bool, len(tools))
	for i := range tools {
		t := &tools[i]
		if j, ok := oldAt[t.Name]; ok && renumber[j] < 0 && string(old.docs[j].raw) == string(t.Raw) {
			renumber[j] = int32(i)
			kept[i] = true
		}
	}
	postings := make(map[string][]posting, len(old.postings))
	for term, list := range old.postings {
		var carried []posting
		for _, p := range list {
			if n := renumber[p.doc]; n >= 0 {
				p.doc = uint32(n)
				carried = append(carried, p)
			}
		}
		if carried != nil {
			postings[term] = carried
		}
	}
	b := r.newBuilder(tools, postings)
	for i := range tools {
		if !kept[i] {
			b.add(i, &tools[i])
			analysed++
			continue
		}
		b.s.docs[i] = old.docs[oldAt[tools[i].Name]]
	}
	return b.finish(), analysed
}

// builder adds tools to a segment.
type builder struct {
	r      Ranking
	s      *segment
	buf    []string
	counts map[string]*[numFields]uint8
}

func (r Ranking) newBuilder(tools []catalog.Tool, postings map[string][]posting) *builder {
	return &builder{
		r:      r,
		s:      &segment{server: tools[0].Server, docs: make([]doc, len(tools)), postings: postings},
		counts: map[string]*[numFields]uint8{},
	}
}

// add analyses tool number i.
func (b *builder) add(i int, t *catalog.Tool) {
	d := &b.s.docs[i]
	title := displayTitle(t)
	*d = doc{tool: t.Name, title: title, desc: t.Description, raw: t.Raw, foldSafe: foldSafe(t.Description)}
	clear(b.counts)
	b.field(d, fieldName, t.Name)
	b.field(d, fieldServer, t.Server)
	b.field(d, fieldTitle, title)
	b.field(d, fieldDesc, t.Description)
	for _, p := range schemaParams(t.InputSchema) {
		b.field(d, fieldParamName, p.name)
		b.field(d, fieldParamDesc, p.desc)
	}
	for term, c := range b.counts {
		b.s.postings[term] = append(b.s.postings[term], posting{doc: uint32(i), tf: *c})
	}
}

// field counts the terms of one field of d.
func (b *builder) field(d *doc, f field, text string) {
	b.buf = terms(b.buf[:0], text, false)
	n := len(b.buf)
	if b.r.Stem {
		for j, w := range b.buf[:n] {
			st := stemWord(w)
			b.buf[j] = st
			if b.r.Exact > 0 && st != w {
				b.buf = append(b.buf, exactPrefix+w)
			}
		}
	}
	for _, term := range b.buf {
		c := b.counts[term]
		if c == nil {
			c = new([numFields]uint8)
			b.counts[term] = c
		}
		if c[f] < math.MaxUint8 {
			c[f]++
		}
	}
	d.lens[f] = uint16(min(int(d.lens[f])+n, math.MaxUint16))
}

func (b *builder) finish() *segment {
	for i := range b.s.docs {
		for f := range numFields {
			b.s.sumLen[f] += int64(b.s.docs[i].lens[f])
		}
	}
	return b.s
}

// displayTitle is the title a tool shows people: its title, or else
// annotations.title, where servers written before tools had a title of
// their own still put it (70 of the corpus's 191 tools); MCP gives the two
// that precedence.
func displayTitle(t *catalog.Tool) string {
	if t.Title != "" || len(t.Annotations) == 0 {
		return t.Title
	}
	var a struct {
		Title json.RawMessage `json:"title"`
	}
	var title string
	// Annotations that do not decode, or a title that is not a string,
	// leave the tool without a title: it is still found by the rest.
	if json.Unmarshal(t.Annotations, &a) != nil || json.Unmarshal(a.Title, &title) != nil {
		return ""
	}
	return title
}

type param struct{ name, desc string }

// schemaParams returns the top-level properties of an input schema with
// their descriptions (or titles). A schema that does not decode has none:
// the tool is still found by its name and description.
func schemaParams(schema json.RawMessage) []param {
	var s struct {
		Properties map[string]struct {
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	ps := make([]param, 0, len(s.Properties))
	for name, p := range s.Properties {
		desc := p.Description
		if desc == "" {
			desc = p.Title
		}
		ps = append(ps, param{name, desc})
	}
	return ps
}
