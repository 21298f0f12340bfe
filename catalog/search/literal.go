package search

import (
	"regexp/syntax"
	"strings"
)

// requiredLiteral returns a lower-case ASCII string that every match of
// pattern (matched case-insensitively) contains, or "" when there is none
// worth checking. A description that lacks it cannot match, and finding that
// out with a byte search is far cheaper than running the regular expression
// over it: case-insensitive patterns lose regexp's own literal-prefix
// search.
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl|syntax.FoldCase)
	if err != nil {
		return ""
	}
	lit := longestRequired(re.Simplify())
	if len(lit) < 3 {
		return ""
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] >= 0x80 {
			return "" // case folding beyond ASCII is regexp's business
		}
	}
	return strings.ToLower(lit)
}

// longestRequired is the longest literal that every match of re contains.
func longestRequired(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune)
	case syntax.OpCapture:
		return longestRequired(re.Sub[0])
	case syntax.OpPlus:
		return longestRequired(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return longestRequired(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := longestRequired(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// containsFold reports whether s contains lit (lower-case ASCII), ignoring
// ASCII case. It looks for the literal's rarest letter with a byte search and
// compares around each occurrence.
func containsFold(s, lit string) bool {
	if len(lit) > len(s) {
		return false
	}
	at := rarestByte(lit)
	lo, up := lit[at], lit[at]
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	for from := at; from < len(s); {
		i := indexEither(s[from:], lo, up)
		if i < 0 {
			return false
		}
		start := from + i - at
		if start+len(lit) > len(s) {
			return false
		}
		if strings.EqualFold(s[start:start+len(lit)], lit) {
			return true
		}
		from += i + 1
	}
	return false
}

// foldSafe reports whether containsFold can decide for s what a
// case-insensitive regular expression would: whether s lacks the only two
// non-ASCII characters that case-fold to ASCII letters, the Kelvin sign
// (k) and the long s (s).
func foldSafe(s string) bool {
	return !strings.ContainsAny(s, "\u212A\u017F")
}

// indexEither is the first index of a or b in s, or -1.
func indexEither(s string, a, b byte) int {
	i := strings.IndexByte(s, a)
	if a == b {
		return i
	}
	j := strings.IndexByte(s, b)
	switch {
	case i < 0:
		return j
	case j < 0 || i < j:
		return i
	}
	return j
}

// rarestByte is the index in lit of the byte that occurs least in English
// text, so the byte search stops rarely.
func rarestByte(lit string) int {
	const byFrequency = " etaoinshrdlcumwfgypbvkjxqz"
	best, bestRank := 0, -1
	for i := 0; i < len(lit); i++ {
		rank := strings.IndexByte(byFrequency, lit[i])
		if rank < 0 {
			rank = len(byFrequency) // digits and punctuation are rarer still
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}
