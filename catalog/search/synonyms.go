package search

// synonyms maps a query word to the words tool catalogs tend to use for
// the same thing: what a person says ("folder", "PR", "bug") against what
// an API names ("directory", "pull request", "issue"). Expansions are
// searched at Ranking.SynonymWeight. Keys are lower-case words as a query
// is split (not stemmed); values are phrases, analysed like a query.
//
// An entry stays only while the measurement shows it helps: taken out on
// its own, it lowers the figures of at least one query of
// bench/corpus/queries.json and raises none (bench/README.md, "Tool
// search", has the method; the bench's TestSynonymsHelp checks it). A word
// a person might say that no query exercises is left out, however
// plausible, until a query shows what it is worth.
var synonyms = map[string][]string{
	// abbreviations
	"pr":   {"pull request"},
	"repo": {"repository"},

	// everyday words for API words
	"folder": {"directory"},
	"bug":    {"issue"},
	"errors": {"issues", "failures"},
	"go":     {"navigate"},
	"remove": {"delete"},
	"add":    {"create"},
	"open":   {"create"},
	"show":   {"get", "list"},
	"find":   {"search"},
	"save":   {"write"},
}
