package suggest

import "testing"

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		word  string
		cands []string
		want  string
	}{
		{"comand", []string{"command", "args"}, "command"},
		{"doctr", []string{"demo", "doctor", "tools"}, "doctor"},
		{"dev", []string{"env", "cwd"}, ""}, // two edits: another word
		{"tool", []string{"tools"}, "tools"},
		{"zzzzzz", []string{"command"}, ""},
	} {
		if got := Closest(tc.word, tc.cands); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
