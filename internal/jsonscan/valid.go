package jsonscan

// Valid reports whether b is one JSON value with optional white space
// around it, exactly as encoding/json.Valid does (FuzzValid checks it):
// bytes that are not UTF-8 are taken inside strings, nesting is limited
// to maxNesting arrays and objects. It is the same check in one pass of a
// plain loop, several times faster than encoding/json's scanner, for the
// text of every host frame and every server line on the call path.
func Valid(b []byte) bool {
	// stack holds, for each open array or object, '[' or '{'.
	var small [64]byte
	stack := small[:0]
	i := SkipSpace(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxNesting {
				return false
			}
			stack = append(stack, c)
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']': empty
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = validName(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = validString(b, i); i < 0 {
				return false
			}
		case c == '-' || '0' <= c && c <= '9':
			if i = validNumber(b, i); i < 0 {
				return false
			}
		case c == 't':
			if !hasWord(b, i, "true") {
				return false
			}
			i += 4
		case c == 'f':
			if !hasWord(b, i, "false") {
				return false
			}
			i += 5
		case c == 'n':
			if !hasWord(b, i, "null") {
				return false
			}
			i += 4
		default:
			return false
		}
		// After a value: a comma, the end of its container, or the end.
		for {
			i = SkipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			open := stack[len(stack)-1]
			if b[i] == open+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = SkipSpace(b, i+1)
			if open == '{' {
				if i = validName(b, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// maxNesting is encoding/json's limit of nesting (its scanner's
// maxNestingDepth).
const maxNesting = 10000

// validName checks a member name and its colon at b[i], and returns the
// index of the value after them, or -1.
func validName(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return SkipSpace(b, i+1)
}

// validString checks the string whose quote is b[i], and returns the index
// just past it, or -1.
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber checks the number at b[i], and returns the index just past
// it, or -1. What follows it is the caller's to check.
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func hasWord(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}
