package jsonscan

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Member returns the value of the member name of the object that the
// checked text obj is (the last, if it has two), or nil.
func Member(obj []byte, name string) []byte {
	m, _ := Object(obj)
	var found []byte
	for {
		k, v, ok := m.Next()
		if !ok {
			return found
		}
		if NameIs(k, name) {
			found = v
		}
	}
}

// OuterMember is Member reading the object's members from both ends in
// turn, from the back first when backFirst is set, so that a member near
// either end is found without a pass over the others: a result of
// megabytes names its resultType first or last. A member found from the
// back is the last of its name; one found from the front is returned once
// the members after it were read from the back and none has its name.
func OuterMember(obj []byte, name string, backFirst bool) []byte {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	end := len(obj) - 1
	for end > i && isSpace(obj[end]) {
		end--
	}
	// front: where the next member from the front starts; back: the ','
	// or '}' after the next member from the back. The two meet when every
	// member was read.
	front, back := SkipSpace(obj, i+1), end
	if front >= back || obj[front] != '"' {
		return nil // {} or not an object
	}
	fromFront := !backFirst
	for {
		if !fromFront {
			v, more := backMember(obj, name, front, &back)
			if v != nil || !more {
				return v
			}
			fromFront = true
			continue
		}
		v, more := frontMember(obj, name, &front, back)
		if v != nil {
			// The last of its name only if none follows it: plain when no
			// later text could spell the name (a byte search, far cheaper
			// than reading the members after it), otherwise read them.
			if more && !maySpell(obj[front:back+1], name) {
				return v
			}
			for more {
				var later []byte
				if later, more = backMember(obj, name, front, &back); later != nil {
					return later
				}
			}
			return v
		}
		if !more {
			return nil
		}
		fromFront = false
	}
}

// frontMember reads the member at *front (before back) and moves *front
// to the member after it: its value if its name is name; more reports
// whether a member is left between the two.
func frontMember(obj []byte, name string, front *int, back int) (value []byte, more bool) {
	f := *front
	if f >= back || obj[f] != '"' {
		return nil, false
	}
	kEnd := StringEnd(obj, f)
	v := SkipSpace(obj, kEnd)
	if v >= len(obj) || obj[v] != ':' {
		return nil, false
	}
	v = SkipSpace(obj, v+1)
	vEnd := ValueEnd(obj, v)
	if NameIs(obj[f:kEnd], name) {
		value = obj[v:vEnd]
	}
	next := SkipSpace(obj, vEnd)
	if next >= back || obj[next] != ',' {
		return value, false // it was the last member left
	}
	*front = SkipSpace(obj, next+1)
	return value, true
}

// backMember reads the member that ends before *back (the ',' or '}'
// after it), not before front: its value if its name is name, else
// whether a member is left between the two, with *back at the ',' before
// it.
func backMember(obj []byte, name string, front int, back *int) (value []byte, more bool) {
	ve := *back - 1
	for ve > front && isSpace(obj[ve]) {
		ve--
	}
	vs := valueStart(obj, front, ve+1)
	k := vs - 1
	for k > front && isSpace(obj[k]) {
		k--
	}
	if k <= front || obj[k] != ':' {
		return nil, false
	}
	for k--; k > front && isSpace(obj[k]); k-- {
	}
	if k <= front || obj[k] != '"' {
		return nil, false
	}
	ks := stringStart(obj, front, k)
	if ks < front {
		return nil, false
	}
	if NameIs(obj[ks:k+1], name) {
		return obj[vs : ve+1], false
	}
	if ks == front {
		return nil, false // it was the last member left
	}
	b := ks - 1
	for b > front && isSpace(obj[b]) {
		b--
	}
	if obj[b] != ',' {
		return nil, false
	}
	*back = b
	return nil, true
}

// stringStart returns the index of the opening quote of the string whose
// closing quote is b[q], looking no further back than from (-1 if it is
// not there).
func stringStart(b []byte, from, q int) int {
	for k := q; ; {
		k = bytes.LastIndexByte(b[from:k], '"')
		if k < 0 {
			return -1
		}
		k += from
		// b[k] opens the string unless it is escaped: an odd run of
		// backslashes before it. (An opening quote follows a structural
		// character, never a backslash.)
		if !escapedQuote(b, from-1, k) {
			return k
		}
	}
}

// valueStart returns where the value that ends just before b[end] starts,
// looking no further back than from.
func valueStart(b []byte, from, end int) int {
	if end <= from {
		return from
	}
	switch b[end-1] {
	case '"':
		if s := stringStart(b, from, end-1); s >= from {
			return s
		}
		return from
	case '}', ']':
		depth := 0
		for k := end - 1; k >= from; k-- {
			switch b[k] {
			case '"':
				s := stringStart(b, from, k)
				if s < from {
					return from
				}
				k = s
			case '}', ']':
				depth++
			case '{', '[':
				if depth--; depth == 0 {
					return k
				}
			}
		}
		return from
	}
	k := end - 1
	for k > from && !isDelimiter(b[k-1]) && b[k-1] != ':' && b[k-1] != '[' && b[k-1] != '{' {
		k--
	}
	return k
}

// maySpell reports whether text could hold a member named name: the name
// quoted as it is, or an escape that may spell one of its characters
// (\uXXXX of one of them, or \/ for a slash). Any other escape in a name
// leaves it a different name. A name with a quote, a backslash or a
// control character is always answered true.
func maySpell(text []byte, name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '"' || c == '\\' || c < 0x20 {
			return true
		}
	}
	// Bytes that are not UTF-8 read as U+FFFD, as encoding/json reads them.
	if strings.ContainsRune(name, utf8.RuneError) {
		return true
	}
	if bytes.Contains(text, []byte(`"`+name+`"`)) {
		return true
	}
	if strings.IndexByte(name, '/') >= 0 && bytes.Contains(text, []byte(`\/`)) {
		return true
	}
	for rest := text; ; {
		i := bytes.Index(rest, []byte(`\u`))
		if i < 0 {
			return false
		}
		rest = rest[i+2:]
		r, ok := hex4(rest, 0)
		if !ok || utf16.IsSurrogate(r) || strings.ContainsRune(name, r) {
			return true
		}
	}
}
