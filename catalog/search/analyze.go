package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// terms appends the index terms of text to dst: words split at every
// character that is not a letter or a digit (so snake_case, kebab-case and
// dotted names split), and inside words at camelCase and letter/digit
// boundaries ("getHTTPResponse2" is get, http, response, 2); lower-cased,
// stop words dropped, and stemmed when stem is set.
func terms(dst []string, text string, stem bool) []string {
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			dst = wordTerms(dst, text[start:i], stem)
			start = -1
		}
	}
	if start >= 0 {
		dst = wordTerms(dst, text[start:], stem)
	}
	return dst
}

// wordTerms splits one run of letters and digits at case and digit
// boundaries.
func wordTerms(dst []string, word string, stem bool) []string {
	start := 0
	var prev rune
	for i, r := range word {
		if i > 0 && boundary(word, prev, r, i) {
			dst = addTerm(dst, word[start:i], stem)
			start = i
		}
		prev = r
	}
	return addTerm(dst, word[start:], stem)
}

// boundary reports whether a new part of an identifier starts at word[i]
// (rune r, after prev): lower to upper (getIssue), letter to digit and back
// (base64 is base, 64; v2 is v, 2), and the last capital of a run of
// capitals followed by a lower-case letter (HTTPServer is http, server).
func boundary(word string, prev, r rune, i int) bool {
	switch {
	case unicode.IsLower(prev) && unicode.IsUpper(r):
		return true
	case unicode.IsDigit(prev) != unicode.IsDigit(r):
		return true
	case unicode.IsUpper(prev) && unicode.IsUpper(r):
		next, _ := utf8.DecodeRuneInString(word[i+utf8.RuneLen(r):])
		return unicode.IsLower(next)
	}
	return false
}

func addTerm(dst []string, part string, stem bool) []string {
	t := strings.ToLower(part)
	if stopWords[t] {
		return dst
	}
	if stem {
		t = stemWord(t)
	}
	return append(dst, t)
}

// stopWords are English function words: they match nearly every
// description, so they cost time and add only noise to a ranking.
var stopWords = setOf(
	"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
	"has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on",
	"or", "our", "so", "that", "the", "their", "then", "there", "these", "this", "those", "to",
	"use", "used", "using", "was", "we", "were", "what", "when", "where", "which", "who",
	"will", "with", "you", "your",
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// stemWord is a light English suffix stemmer: it maps inflections of one
// word to one term (files/file, creating/created/create, queries/query),
// and it is the same function on both sides, so it only has to be
// consistent, not linguistically right ("creat" is fine). It leaves words
// of four letters or fewer alone.
func stemWord(w string) string {
	if len(w) <= 4 || !isASCIILower(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed"} {
		if stem, ok := strings.CutSuffix(w, suf); ok && len(stem) >= 3 && hasVowel(stem) {
			w = stem
			// running -> runn -> run
			if n := len(w); n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
				w = w[:n-1]
			}
			break
		}
	}
	// create/creat(ed), update/updat(ing): drop a final e so that both
	// sides meet.
	if n := len(w); n > 4 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func isASCIILower(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

func hasVowel(w string) bool { return strings.ContainsAny(w, "aeiouy") }

// firstSentence is the start of a description that says what the tool
// does: up to the first sentence end (". ", "! ", "? ", a line break), with
// a heading such as "Purpose:" continued into the next sentence, at most
// maxSummary bytes.
func firstSentence(desc string) string {
	const maxSummary = 240
	var b strings.Builder
	rest := strings.TrimSpace(desc)
	for rest != "" && b.Len() < maxSummary {
		s, after := cutSentence(rest)
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		rest = strings.TrimSpace(after)
		// A heading ("Purpose:") or a list number ("1.") says nothing
		// yet: go on.
		if !strings.HasSuffix(s, ":") && wordCount(b.String()) >= 3 {
			break
		}
	}
	out := b.String()
	if len(out) > maxSummary {
		cut := maxSummary
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = strings.TrimSpace(out[:cut]) + "…"
	}
	return out
}

// wordCount counts the words of s that have a letter.
func wordCount(s string) int {
	n := 0
	for _, f := range strings.Fields(s) {
		if strings.IndexFunc(f, unicode.IsLetter) >= 0 {
			n++
		}
	}
	return n
}

// cutSentence splits s after its first sentence.
func cutSentence(s string) (sentence, rest string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n', '\r':
			return strings.TrimSpace(s[:i]), s[i+1:]
		case '.', '!', '?':
			if i+1 == len(s) {
				return s, ""
			}
			if c := s[i+1]; c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				return s[:i+1], s[i+1:]
			}
		}
	}
	return s, ""
}
