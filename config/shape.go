package config

import "fmt"

// Limits on the shape of a config file, checked on its bytes before a
// parser sees them. The parsers' memory grows with a file's structure far
// faster than with its size: hujson recurses once per level (a megabyte of
// "[" overflows the goroutine stack, which no recover catches), every
// value costs a few hundred bytes of syntax tree and map, and
// BurntSushi/toml keeps the full name of every key, so nesting and long
// key names cost memory quadratic in the file's size (20 KB of nested
// inline tables took 1 GB). Project files come from whatever repository
// is checked out, so these limits keep a hostile one from exhausting the
// sidecar. Real files are far inside them: a config nests 4 to 6 levels
// and holds hundreds of values.
const (
	// maxNesting bounds how deep values nest: each JSON array or object
	// is a level; in TOML each part of a table's or key's dotted name is
	// one, and so is each array.
	maxNesting = 64
	// maxValues bounds the values of a file: JSON array elements and
	// object members, TOML keys, tables and array elements.
	maxValues = 50_000
	// maxKeyNames bounds the sum, over every key of a TOML file, of the
	// length of its full dotted name (its table's name included), each
	// part counting keyPartCost more: what BurntSushi/toml keeps per key.
	maxKeyNames = 1 << 20
	keyPartCost = 16
)

// shapeError is a limit exceeded at a byte offset of data.
func shapeError(file string, data []byte, offset int, msg string) *Error {
	line, col := position(data, int64(offset))
	return &Error{File: file, Line: line, Column: col, Message: fmt.Sprintf("%s at line %d, column %d (a limit that keeps a hostile file from exhausting memory)", msg, line, col)}
}

func nestingError(file string, data []byte, offset int) *Error {
	return shapeError(file, data, offset, fmt.Sprintf("nested more than %d levels deep", maxNesting))
}

func valuesError(file string, data []byte, offset int) *Error {
	return shapeError(file, data, offset, fmt.Sprintf("more than %d values", maxValues))
}

// checkJSONShape checks data[from:to], JSON or JSONC, against maxNesting
// and, when countValues, maxValues; offsets and positions are data's.
//
// It follows strings and comments, and counts brackets and commas
// elsewhere. On invalid input it may count what a parser would not: but a
// parser stops at the first error, and everything before it is read alike.
func checkJSONShape(file string, data []byte, from, to int, countValues bool) *Error {
	depth, values := 0, 0
	for i := from; i < to; i++ {
		switch data[i] {
		case '"':
			i = skipJSONString(data[:to], i)
		case '/':
			i = skipJSONComment(data[:to], i)
		case '[', '{':
			depth++
			if depth > maxNesting {
				return nestingError(file, data, i)
			}
			values++
		case ']', '}':
			depth = max(depth-1, 0)
		case ',':
			values++
		default:
			continue
		}
		if countValues && values > maxValues {
			return valuesError(file, data, i)
		}
	}
	return nil
}

// skipJSONString returns the index of the quote closing the string opened
// at data[i], or len(data)-1.
func skipJSONString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}

// skipJSONComment returns the index of the last byte of a comment starting
// at data[i] ("//" to the end of the line, "/*" to "*/"), or i when none
// starts there.
func skipJSONComment(data []byte, i int) int {
	if i+1 >= len(data) {
		return i
	}
	switch data[i+1] {
	case '/':
		for i += 2; i < len(data) && data[i] != '\n'; i++ {
		}
		return i - 1
	case '*':
		for i += 2; i+1 < len(data); i++ {
			if data[i] == '*' && data[i+1] == '/' {
				return i + 1
			}
		}
		return len(data) - 1
	}
	return i
}

// checkTOMLShape checks a TOML file against maxNesting, maxValues and
// maxKeyNames.
//
// It follows TOML's lexical structure (strings, comments, table headers,
// dotted keys, arrays and inline tables, multi-line as TOML 1.1 allows).
// As for JSON, a construct it does not expect is a syntax error the
// parser stops at, so what follows it is never parsed.
func checkTOMLShape(file string, data []byte) *Error {
	s := &tomlShape{file: file, data: data}
	return s.check()
}

type tomlShape struct {
	file     string
	data     []byte
	values   int
	keyNames int
}

// tomlFrame is the table or array values are read into: the document's
// current table, an inline table or an array.
type tomlFrame struct {
	kind byte // 't' for the current table ([header]), '{' or '['
	// level is the frame's depth; a key of n parts inside sits at
	// level+n, an array's elements at level+1.
	level int
	// name is the cost of the frame's full name (see maxKeyNames).
	name int
	// wantKey: a key comes next (at the start of a line in a table,
	// after "{" or "," in an inline table).
	wantKey bool
}

func (s *tomlShape) check() *Error {
	data := s.data
	stack := []tomlFrame{{kind: 't', wantKey: true}}
	// After "key =", the value's level and name, for an array or inline
	// table that opens there.
	valueLevel, valueName := 0, 0
	for i := 0; i < len(data); i++ {
		top := &stack[len(stack)-1]
		c := data[i]
		switch {
		case c == ' ' || c == '\t':
			continue
		case c == '\n' || c == '\r':
			if top.kind == 't' {
				top.wantKey = true
			}
			continue
		case c == '#':
			for i < len(data) && data[i] != '\n' && data[i] != '\r' {
				i++
			}
			i--
			continue
		}
		if top.wantKey {
			switch {
			case top.kind == 't' && c == '[':
				// A table header, [a.b] or [[a.b]].
				j := i + 1
				if j < len(data) && data[j] == '[' {
					j++
				}
				parts, name, end := scanTOMLKey(data, j)
				if e := s.addKey(i, parts, name, 0, 0); e != nil {
					return e
				}
				top.level, top.name, top.wantKey = parts, name, false
				i = end - 1
				continue
			case top.kind == '{' && c == '}':
				stack = stack[:len(stack)-1]
				continue
			}
			parts, name, end := scanTOMLKey(data, i)
			if parts == 0 {
				// Not a key: a syntax error the parser stops at.
				top.wantKey = false
				continue
			}
			if e := s.addKey(i, parts, name, top.level, top.name); e != nil {
				return e
			}
			top.wantKey = false
			valueLevel, valueName = top.level+parts, top.name+name
			i = end - 1
			continue
		}
		switch c {
		case '"', '\'':
			i = skipTOMLString(data, i)
		case '[':
			level, name := valueLevel, valueName
			if top.kind == '[' {
				level, name = top.level, top.name
			}
			if level+1 > maxNesting {
				return nestingError(s.file, data, i)
			}
			stack = append(stack, tomlFrame{kind: '[', level: level + 1, name: name})
			if e := s.addValue(i); e != nil {
				return e
			}
		case '{':
			level, name := valueLevel, valueName
			if top.kind == '[' {
				level, name = top.level, top.name
			}
			stack = append(stack, tomlFrame{kind: '{', level: level, name: name, wantKey: true})
			if e := s.addValue(i); e != nil {
				return e
			}
		case ']':
			if top.kind == '[' {
				stack = stack[:len(stack)-1]
			}
		case '}':
			if top.kind == '{' {
				stack = stack[:len(stack)-1]
			}
		case ',':
			switch top.kind {
			case '{':
				top.wantKey = true
			case '[':
				if e := s.addValue(i); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// addKey counts a key of parts parts and name cost name at data[at],
// inside a frame of the given level and name cost.
func (s *tomlShape) addKey(at, parts, name, level, frameName int) *Error {
	if level+parts > maxNesting {
		return nestingError(s.file, s.data, at)
	}
	s.keyNames += frameName + name
	if s.keyNames > maxKeyNames {
		return shapeError(s.file, s.data, at, fmt.Sprintf("key names too long or too deep: the full names of the keys, each with its table's name, add up to more than %d bytes", maxKeyNames))
	}
	return s.addValue(at)
}

func (s *tomlShape) addValue(at int) *Error {
	s.values++
	if s.values > maxValues {
		return valuesError(s.file, s.data, at)
	}
	return nil
}

// scanTOMLKey reads a dotted key starting at data[i] (bare and quoted
// parts, blanks around the dots) and returns its number of parts, its
// cost (see maxKeyNames) and the index just past it.
func scanTOMLKey(data []byte, i int) (parts, name, end int) {
	for {
		for i < len(data) && (data[i] == ' ' || data[i] == '\t') {
			i++
		}
		start := i
		switch {
		case i < len(data) && (data[i] == '"' || data[i] == '\''):
			i = skipTOMLString(data, i) + 1
		default:
			for i < len(data) && isBareKeyByte(data[i]) {
				i++
			}
		}
		if i == start {
			return parts, name, i
		}
		parts++
		name += i - start + keyPartCost
		for i < len(data) && (data[i] == ' ' || data[i] == '\t') {
			i++
		}
		if i >= len(data) || data[i] != '.' {
			return parts, name, i
		}
		i++
	}
}

func isBareKeyByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// skipTOMLString returns the index of the last byte of the string opened
// at data[i]: basic ("...", with escapes) or literal ('...'), single-line
// or multi-line (opened by three quotes). A single-line string ends at a
// line end too (the parser's error), and any string at the end of data.
func skipTOMLString(data []byte, i int) int {
	q := data[i]
	if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
		for j := i + 3; j < len(data); j++ {
			switch {
			case data[j] == '\\' && q == '"':
				j++
			case data[j] == q && j+2 < len(data) && data[j+1] == q && data[j+2] == q:
				// Up to two more quotes belong to the string.
				end := j + 2
				for k := 0; k < 2 && end+1 < len(data) && data[end+1] == q; k++ {
					end++
				}
				return end
			}
		}
		return len(data) - 1
	}
	for j := i + 1; j < len(data); j++ {
		switch {
		case data[j] == '\\' && q == '"':
			j++
		case data[j] == q:
			return j
		case data[j] == '\n' || data[j] == '\r':
			return j - 1
		}
	}
	return len(data) - 1
}
