package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		// 5 bytes, 1 word: 0.55 + 0.66
		{"hello", 1},
		// 13 bytes, 2 words, 7 punctuation: 1.43 + 1.32 + 1.12 (o200k_base
		// makes 5 tokens of it)
		{`{"a":"hello"}`, 4},
		// white space separates words and is neither word nor punctuation:
		// 11 bytes, 2 words: 1.21 + 1.32
		{"hello world", 3},
		// 2 non-ASCII characters (4 and 3 bytes) count 2 each
		{"🎯€", 4},
		// invalid UTF-8 bytes count as non-ASCII characters, one each
		{"\xff\xfe", 4},
	}
	for _, tt := range tests {
		if got := EstimateTokens([]byte(tt.in)); got != tt.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestCountTokenFeatures(t *testing.T) {
	tests := []struct {
		in   string
		want TokenFeatures
	}{
		{"", TokenFeatures{}},
		{`{"a":"hello world"}`, TokenFeatures{ASCII: 19, Words: 3, Punct: 7}},
		// snake_case is two words split by punctuation; digits are word
		// characters
		{"list_v2 ok", TokenFeatures{ASCII: 10, Words: 3, Punct: 1}},
		// a non-ASCII character ends a word and counts once, whatever its
		// length in bytes
		{"naïve🎯", TokenFeatures{ASCII: 4, Words: 2, Other: 2}},
		{"\xff\xfe", TokenFeatures{Other: 2}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, CountTokenFeatures([]byte(tt.in))); diff != "" {
			t.Errorf("CountTokenFeatures(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSummaryJSON(t *testing.T) {
	raw := `{"name":"n","title":"T","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}},"description":"D",` +
		`"outputSchema":{"type":"object"},"tokens":"server's own","annotations":{"readOnlyHint":true},"x-extra":[1]}`
	tools, err := ParseTools("srv", raws(raw))
	if err != nil {
		t.Fatal(err)
	}
	tools[0].Qualified = "mcp__srv__n"
	got, err := tools[0].SummaryJSON(42)
	if err != nil {
		t.Fatal(err)
	}
	// The schemas go, the server's order and unknown members stay, and the
	// sidecar's inputSchemaBytes and tokens come last (a server's member of
	// the same name gives way).
	want := `{"name":"mcp__srv__n","server":"srv","tool":"n","title":"T","description":"D","annotations":{"readOnlyHint":true},"x-extra":[1],` +
		`"inputSchemaBytes":54,"tokens":42}`
	if string(got) != want {
		t.Errorf("SummaryJSON:\n got %s\nwant %s", got, want)
	}
	if n := len(`{"type":"object","properties":{"q":{"type":"string"}}}`); n != 54 {
		t.Fatalf("schema is %d bytes", n)
	}
	// The full form keeps everything, the server's "tokens" member too.
	full, err := tools[0].WireJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(full), `"tokens":"server's own"`) || !strings.Contains(string(full), `"outputSchema"`) {
		t.Errorf("WireJSON lost members: %s", full)
	}
}

// TestForms: the one-pass rendering equals the separate ones.
func TestForms(t *testing.T) {
	tools, err := ParseTools("srv", raws(
		`{"name":"n","title":"T","inputSchema":{"type":"object"},"description":"D","outputSchema":{"type":"object"},"tokens":1,"approval":"x","x-extra":[1]}`,
		`{"inputSchema":{},"name":"m"}`,
	))
	if err != nil {
		t.Fatal(err)
	}
	for i := range tools {
		tl := &tools[i]
		tl.Qualified = "mcp__srv__" + tl.Name
		if i == 0 {
			tl.Approval = "prompt"
		}
		wire, summary, tokens, err := tl.Forms()
		if err != nil {
			t.Fatal(err)
		}
		w, _ := tl.WireJSON()
		s, _ := tl.SummaryJSON(EstimateTokens(w))
		if string(wire) != string(w) || string(summary) != string(s) || tokens != EstimateTokens(w) {
			t.Errorf("Forms of %s:\n wire %s\n want %s\n summary %s\n want %s\n tokens %d", tl.Name, wire, w, summary, s, tokens)
		}
		if !json.Valid(wire) || !json.Valid(summary) {
			t.Errorf("invalid JSON: %s / %s", wire, summary)
		}
	}
}
