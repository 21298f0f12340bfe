package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

var validSeeds = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a" : [1, 2.5, -3e+4, 0.1E-2, true, false, null, "x"]}`,
	`[1,]`, `{"a":1,}`, `{,}`, `[,1]`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `]`, `}`, `[}`, `{]`,
	`01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `+1`, `1.5e3x`, `0x10`, `-01`, `1E5`,
	`tru`, `true`, `truex`, `nul`, `null `, `false,`, `nan`,
	`"\u00e9\ud800"`, `"\u12"`, `"\x"`, `"\/\b\f\n\r\t\"\\"`, "\"a\tb\"", "\"a\x7fb\"", "\"\xff\xfe\"", `"abc`, `"`,
	"\t\r\n{\"a\":[{}]}\n", `{"a":{"b":{"c":[[[]]]}}}`, `[[[[`, `]]]]`, `[{"a":[}]`, `1 2`, `"a" "b"`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
}

// FuzzValid: Valid is encoding/json.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", data, got, want)
		}
	})
}

// Valid agrees with encoding/json at the nesting limit.
func TestValidNesting(t *testing.T) {
	for _, n := range []int{63, 64, 65, maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			b := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
			if got, want := Valid(b), json.Valid(b); got != want {
				t.Errorf("%d levels of %s: Valid = %v, encoding/json says %v", n, open, got, want)
			}
		}
	}
}

func BenchmarkValid(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"hello, this is an echo of a small argument"}],"structuredContent":{"n":1.5e3,"ok":true,"v":null},"isError":false,"_meta":{"io.modelcontextprotocol/related":{"x":"\u00e9\n"}}}}`)
	b.Run("jsonscan", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			Valid(line)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			json.Valid(line)
		}
	})
}
