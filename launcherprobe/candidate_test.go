package launcherprobe

import (
	"errors"
	"testing"
)

func TestDecodeCandidate(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    string
		wantErr error // nil: success; errAny: any error
	}{
		{"plain", `"/usr/bin/codex"`, "/usr/bin/codex", nil},
		{"whitespace around", " \"/a\"\n", "/a", nil},
		{"escaped slash and quote", `"\/opt\/co\"dex"`, `/opt/co"dex`, nil},
		{"UTF-8 text", `"/home/café/codex"`, "/home/café/codex", nil},
		{"escaped BMP character", `"/home/caf\u00e9/codex"`, "/home/café/codex", nil},
		{"surrogate pair", `"/x/\ud83d\ude00"`, "/x/😀", nil},
		{"a real U+FFFD is a character like any other", `"/x/\ufffd"`, "/x/\ufffd", nil},
		{"raw 0xFF byte", "\"/tmp/codex\xff\"", "", ErrNotRepresentable},
		{"truncated UTF-8 sequence", "\"/tmp/caf\xc3\"", "", ErrNotRepresentable},
		{"overlong encoding", "\"/tmp/\xc0\xaf\"", "", ErrNotRepresentable},
		{"encoded surrogate", "\"/tmp/\xed\xb3\xbf\"", "", ErrNotRepresentable},
		{"lone low surrogate escape", `"/tmp/codex\udcff"`, "", ErrNotRepresentable},
		{"lone high surrogate escape", `"/tmp/\ud83d/codex"`, "", ErrNotRepresentable},
		{"high surrogate at the end", `"/tmp/\ud83d"`, "", ErrNotRepresentable},
		{"two high surrogates", `"/tmp/\ud83d\ud83d"`, "", ErrNotRepresentable},
		{"escaped backslash before u is not an escape", `"/tmp/\\udcff"`, `/tmp/\udcff`, nil},
		{"not a string", `42`, "", errAny},
		{"bad escape", `"\x"`, "", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCandidate([]byte(tt.raw))
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("DecodeCandidate(%q) = error %v", tt.raw, err)
			case tt.wantErr == nil && got != tt.want:
				t.Errorf("DecodeCandidate(%q) = %q, want %q", tt.raw, got, tt.want)
			case tt.wantErr == errAny && err == nil:
				t.Errorf("DecodeCandidate(%q) = %q, want an error", tt.raw, got)
			case tt.wantErr == ErrNotRepresentable && !errors.Is(err, ErrNotRepresentable):
				t.Errorf("DecodeCandidate(%q) = %q, %v; want ErrNotRepresentable", tt.raw, got, err)
			}
		})
	}
}

var errAny = errors.New("any error")
