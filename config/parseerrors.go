package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// positioned is a parse error of file at a byte offset of data.
func positioned(file string, data []byte, offset int64, what, msg string) *Error {
	line, col := position(data, offset)
	return &Error{File: file, Line: line, Column: col, Message: fmt.Sprintf("%s at line %d, column %d: %s", what, line, col, msg)}
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// describeJSONCError renders hujson's parse error of a JSONC file with its
// position, and none of the input.
func describeJSONCError(file string, data []byte, err error) *Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return positioned(file, data, se.Offset-1, "invalid JSON", se.Error())
	}
	// hujson reports "hujson: line L, column C: ..." or an offset.
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	var line, col int
	if n, _ := fmt.Sscanf(msg, "line %d, column %d:", &line, &col); n == 2 {
		_, rest, _ := strings.Cut(msg, ": ")
		return &Error{File: file, Line: line, Column: col, Message: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, hujsonReason(rest))}
	}
	return &Error{File: file, Message: "invalid JSON: " + hujsonReason(msg)}
}

// hujsonReason is hujson's reason for a parse error without the input it
// quotes. "invalid literal: <word>" names a bare word of the file, which
// in a file that is not JSON at all (a token, a key) is the secret
// itself: only the kind of error stays.
func hujsonReason(msg string) string {
	if strings.HasPrefix(msg, "invalid literal") {
		return "invalid literal (a bare word where a value belongs; only true, false, null and numbers are written without quotes)"
	}
	return elide(msg)
}

// elide shortens quoted fragments of the input in a parser message to "…",
// keeping single (possibly escaped) characters: a malformed line may hold
// a secret.
func elide(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		inner := q[1 : len(q)-1]
		if utf8.RuneCountInString(inner) == 1 || (len(inner) <= 10 && strings.HasPrefix(inner, `\`)) {
			return q
		}
		return q[:1] + "…" + q[:1]
	})
}

// quoted matches quoted text in a parser message.
var quoted = regexp.MustCompile(`'[^']*'|"(?:[^"\\]|\\.)*"`)

// describeTOMLError renders a TOML syntax error with its position. Longer
// quoted fragments of the input are elided: a malformed line may hold a
// secret. The key the error follows is named only under [mcp_servers]:
// elsewhere, in a file that is not a config at all, a "key" may be a
// token (a base64 secret ends in "=").
func describeTOMLError(file string, err error) *Error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: file, Message: "invalid TOML: " + elide(err.Error())}
	}
	msg := elide(pe.Message)
	where := fmt.Sprintf("line %d", pe.Position.Line)
	if pe.Position.Col > 0 {
		where += fmt.Sprintf(", column %d", pe.Position.Col)
	}
	if strings.HasPrefix(pe.LastKey, "mcp_servers.") {
		where += fmt.Sprintf(" (after key %q)", pe.LastKey)
	}
	return &Error{File: file, Line: pe.Position.Line, Column: pe.Position.Col, Message: fmt.Sprintf("invalid TOML at %s: %s", where, msg)}
}
