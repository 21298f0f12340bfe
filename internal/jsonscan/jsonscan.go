// Package jsonscan finds the parts of JSON text without decoding it: the
// members of an object, the extent of a value, the end of a string. The
// wire reads a message's id, method and result this way, as slices of the
// bytes it read, so that a large result or argument is neither copied nor
// turned into Go values.
//
// The contract, which FuzzMembers checks against encoding/json:
//
//   - Member names are compared after unescaping, as encoding/json
//     unescapes them: "\u0069d" is the name id. Names are case-sensitive
//     (as JSON-RPC's are, and encoding/json's map keys).
//   - Of a name given twice, the last counts, as in encoding/json.
//   - A value's extent is what encoding/json hands a json.RawMessage: no
//     white space around it. Strings are skipped whole, escaped quotes and
//     backslashes included, so nothing inside a string is taken for
//     structure.
//   - Object, Member, OuterMember, ValueEnd, StringEnd and HasLayout take
//     text that was checked whole (json.Valid, or a decoder that checks);
//     on other text they return something, never panic, but not
//     necessarily what a parser would. Prefix takes unchecked text, which
//     may be cut short: it stops at the first member it cannot read whole,
//     and it bounds nesting at MaxDepth as encoding/json does.
//   - Nothing allocates on the path a well-formed message takes: names
//     without escapes are compared in place, and strings are crossed from
//     quote to quote with bytes.IndexByte.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Prefix reads, the
// bound encoding/json's decoder sets.
const MaxDepth = 10000

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// StringEnd returns the index just past the string whose opening quote is
// b[i], in checked text. It jumps from quote to quote (bytes.IndexByte):
// a result's strings (a file, an image in base64) are most of its bytes,
// and a quote is the string's end unless an odd run of backslashes comes
// before it.
func StringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		if escapedQuote(b, i, q) {
			j = q + 1
			continue
		}
		return q + 1
	}
	return len(b)
}

// escapedQuote reports whether the quote b[q] of the string that starts
// at b[open] is escaped: an odd run of backslashes before it (in a JSON
// string a backslash starts an escape, and only the escape of a backslash
// has a backslash second).
func escapedQuote(b []byte, open, q int) bool {
	n := 0
	for p := q - 1; p > open && b[p] == '\\'; p-- {
		n++
	}
	return n%2 == 1
}

// ValueEnd returns the index just past the value that starts at b[i], in
// checked text.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = StringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}

// HasLayout reports whether the checked text b has white space between
// its tokens (white space inside strings does not count).
func HasLayout(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = StringEnd(b, i) - 1
		case ' ', '\t', '\r', '\n':
			return true
		}
	}
	return false
}

// Members reads the members of a JSON object in order (Object, Prefix).
type Members struct {
	b       []byte
	i       int  // where the next member's name is expected
	checked bool // b was checked whole
	done    bool
	vstart  int // where the value Next returned starts
}

// Object returns the members of the object that the checked text b is;
// ok is false when b is not an object.
func Object(b []byte) (m Members, ok bool) {
	return object(b, true)
}

// Prefix returns the members of the object that the unchecked text b
// starts with; ok is false when b does not start with '{'. Its Next stops
// at the first member it cannot read whole: b may be invalid JSON, or cut
// short, and a message's id may still be found in it. A value that Next
// returns is valid JSON.
func Prefix(b []byte) (m Members, ok bool) {
	return object(b, false)
}

func object(b []byte, checked bool) (Members, bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return Members{done: true}, false
	}
	return Members{b: b, i: SkipSpace(b, i+1), checked: checked}, true
}

// Next returns the next member: its name as written (quotes and escapes
// included: compare it with NameIs, decode it with AppendName) and its
// value, slices of the text. ok is false after the last member. From
// Prefix, a member whose name was read but whose value could not be comes
// back with value nil, and is the last.
func (m *Members) Next() (name, value []byte, ok bool) {
	if m.done {
		return nil, nil, false
	}
	b, i := m.b, m.i
	if i >= len(b) || b[i] != '"' {
		m.done = true
		return nil, nil, false
	}
	var kEnd int
	if m.checked {
		kEnd = StringEnd(b, i)
	} else if kEnd, ok = scanString(b, i); !ok {
		m.done = true
		return nil, nil, false
	}
	name = b[i:kEnd]
	i = SkipSpace(b, kEnd)
	if i >= len(b) || b[i] != ':' {
		m.done = true
		return nil, nil, false
	}
	i = SkipSpace(b, i+1)
	var vEnd int
	if m.checked {
		vEnd = ValueEnd(b, i)
	} else if vEnd, ok = scanValue(b, i); !ok {
		m.done = true
		return name, nil, true
	}
	value, m.vstart = b[i:vEnd], i
	i = SkipSpace(b, vEnd)
	if i < len(b) && b[i] == ',' {
		m.i = SkipSpace(b, i+1)
	} else {
		m.done = true
	}
	return name, value, true
}

// ValueOffset is the index in the text of the first byte of the value
// Next returned last.
func (m *Members) ValueOffset() int { return m.vstart }

// scanString returns the end of the string starting at b[i] in unchecked
// text; ok is false when it does not end, or has a control character.
func scanString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			j++
		case c < 0x20:
			return j, false
		}
	}
	return len(b), false
}

// scanValue returns the end of the value starting at b[i] in unchecked
// text, and whether that value is valid JSON. A scalar must be followed by
// a delimiter, so that a number cut short is not taken for a whole one.
func scanValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	end := i
	switch b[i] {
	case '"':
		var ok bool
		if end, ok = scanString(b, i); !ok {
			return end, false
		}
	case '{', '[':
		depth := 0
	brackets:
		for end = i; end < len(b); end++ {
			switch b[end] {
			case '"':
				e, ok := scanString(b, end)
				if !ok {
					return e, false
				}
				end = e - 1
			case '{', '[':
				if depth++; depth > MaxDepth {
					return end, false
				}
			case '}', ']':
				if depth--; depth == 0 {
					end++
					break brackets
				}
			}
		}
		if depth != 0 {
			return len(b), false
		}
	default:
		for end < len(b) && !isDelimiter(b[end]) {
			end++
		}
		if end == len(b) {
			return end, false
		}
	}
	// The extent is found; whether what lies in it is JSON is
	// encoding/json's to say.
	return end, json.Valid(b[i:end])
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// NameIs reports whether the member name as written (quoted, from Next)
// is want once unescaped. It does not allocate for a name of up to 64
// bytes.
func NameIs(name []byte, want string) bool {
	if len(name) < 2 {
		return false
	}
	if inner := name[1 : len(name)-1]; plain(inner) {
		return string(inner) == want
	}
	var buf [64]byte
	return string(AppendName(buf[:0], name)) == want
}

// plain reports whether the inside of a string is its value as it is:
// no escape, and only ASCII (other bytes must be checked for UTF-8).
func plain(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// AppendName appends the member name as written (quoted, from Next)
// unescaped, as encoding/json decodes a string: escapes replaced, and
// invalid UTF-8 and lone surrogates as U+FFFD.
func AppendName(dst, name []byte) []byte {
	if len(name) < 2 {
		return dst
	}
	s := name[1 : len(name)-1]
	if plain(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i += 2
			switch s[i-1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(s, i)
				if !ok {
					return dst // not checked text
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok := rune(0), false
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok = hex4(s, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, s[i-1])
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// hex4 reads the four hex digits at s[i].
func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

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
			// The last of its name only if none follows it.
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
