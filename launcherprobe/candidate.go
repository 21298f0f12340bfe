package launcherprobe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotRepresentable is returned by DecodeCandidate for a path that JSON
// cannot carry as UTF-8 text.
var ErrNotRepresentable = errors.New("not representable as UTF-8")

// DecodeCandidate decodes a candidate path from the JSON text of a string
// exactly as the host sent it (the value of
// initialize.launcher.codexExecutable). encoding/json replaces both a byte
// that is not UTF-8 and a lone surrogate escape such as \udcff with U+FFFD,
// which would make the sidecar verify and advertise a different file than
// the one the host named; DecodeCandidate refuses both with
// ErrNotRepresentable instead. A surrogate pair escaping one character
// (\ud83d\ude00) is fine.
func DecodeCandidate(raw []byte) (string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", fmt.Errorf("not a JSON string")
	}
	body := b[1 : len(b)-1]
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == '\\' && i+1 < len(body) && body[i+1] == 'u':
			r, ok := hex4(body, i+2)
			if !ok {
				return "", fmt.Errorf("bad \\u escape")
			}
			i += 6
			if !utf16.IsSurrogate(r) {
				continue
			}
			// A high surrogate must be followed at once by a low one.
			if r < 0xdc00 && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
				if r2, ok := hex4(body, i+2); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
					i += 6
					continue
				}
			}
			return "", fmt.Errorf("%w: lone surrogate escape \\u%04x", ErrNotRepresentable, r)
		case c == '\\':
			i += 2 // the escaped byte is ASCII in any valid string
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && size == 1 {
				return "", fmt.Errorf("%w: byte 0x%02x is not UTF-8", ErrNotRepresentable, c)
			}
			i += size
		}
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", err
	}
	return s, nil
}

// hex4 reads the four hex digits of a \u escape at body[i:].
func hex4(body []byte, i int) (rune, bool) {
	if i+4 > len(body) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(body[i:i+4]), 16, 16)
	return rune(v), err == nil
}
