package protocol

import (
	"encoding/json"
	"testing"
)

// validIDText's fast path (plainID) agrees with the JSON scanner on every
// id, and takes only valid ones.
func TestValidIDText(t *testing.T) {
	scanned := func(raw []byte) bool {
		if len(raw) == 0 || !json.Valid(raw) {
			return false
		}
		c := raw[0]
		return c == '"' || c == '-' || isDigit(c)
	}
	for _, id := range []string{
		`0`, `1`, `42`, `007`, `00`, `-1`, `1.5`, `1e3`, `123456789012345678901234567890`,
		`""`, `"a"`, `"req-1"`, `"a b"`, `"\u0073"`, `"\"`, `"a"b"`, `"`, `"é"`, "\"a\tb\"", "\"a\x7fb\"",
		`null`, `true`, `{}`, `[]`, ``, ` 1`, `1 `, `"\ud800"`, `-`, `+1`, `0x1`,
	} {
		raw := []byte(id)
		if got, want := validIDText(raw), scanned(raw); got != want {
			t.Errorf("validIDText(%s) = %v, want %v", id, got, want)
		}
		if plainID(raw) && !json.Valid(raw) {
			t.Errorf("plainID(%s) took an invalid id", id)
		}
	}
}

func BenchmarkValidIDText(b *testing.B) {
	for _, id := range []string{`12345`, `"req-12345"`} {
		b.Run(id, func(b *testing.B) {
			raw := []byte(id)
			for b.Loop() {
				validIDText(raw)
			}
		})
	}
}
