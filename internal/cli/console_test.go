package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each answer is checked against its field as MCP's elicitation schema
// restricts it, and comes out with the field's JSON type.
func TestFormFieldParse(t *testing.T) {
	schema := `{"type":"object","properties":{
		"email":{"type":"string","format":"email"},
		"short":{"type":"string","minLength":2,"maxLength":3},
		"n":{"type":"number","minimum":1,"maximum":2},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]},
		"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":2},
		"when":{"type":"string","format":"date"}},"required":["email"]}`
	fields, err := formFields(json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]formField{}
	var order []string
	for _, f := range fields {
		byName[f.name] = f
		order = append(order, f.name)
	}
	if diff := cmp.Diff([]string{"email", "short", "n", "size", "tags", "when"}, order); diff != "" {
		t.Errorf("fields not in the schema's order (-want +got):\n%s", diff)
	}
	if !byName["email"].required || byName["short"].required {
		t.Error("required not read")
	}
	for _, tc := range []struct {
		field, answer string
		want          any
		err           string
	}{
		{"email", "ada@example.com", "ada@example.com", ""},
		{"email", "ada", nil, "want an email address"},
		{"short", "x", nil, "at least 2"},
		{"short", "abcd", nil, "at most 3"},
		{"short", "ab", "ab", ""},
		{"n", "1.5", 1.5, ""},
		{"n", "3", nil, "from 1 to 2"},
		{"n", "x", nil, "want a number"},
		{"size", "Large", "l", ""},
		{"size", "1", "s", ""},
		{"size", "m", nil, "not one of the values"},
		{"tags", "a, 3", []any{"a", "c"}, ""},
		{"tags", "a,b,c", nil, "at most 2"},
		{"when", "2026-12-31", "2026-12-31", ""},
		{"when", "31/12/2026", nil, "want a date"},
	} {
		got, err := byName[tc.field].parse(tc.answer)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: error %v, want %q", tc.field, tc.answer, err, tc.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("%s %q = %v (%v), want %v", tc.field, tc.answer, got, err, tc.want)
		}
	}
}

// readSignal closes reading at its first Read.
type readSignal struct {
	r       io.Reader
	reading chan struct{}
	once    sync.Once
}

func (r *readSignal) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.reading) })
	return r.r.Read(p)
}

// A question given up on while its read waits does not take the answer
// typed for the next one.
func TestLineInputDropsAbandonedReads(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	sig := &readSignal{r: pr, reading: make(chan struct{})}
	in := newLineInput(sig)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := in.readLine(ctx)
		errc <- err
	}()
	<-sig.reading // the first question's read waits for a line
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the abandoned read returned no error")
	}
	go pw.Write([]byte("typed for the first question\nsecond\n"))
	line, err := in.readLine(context.Background())
	if err != nil || line != "second" {
		t.Errorf("next read = %q, %v; want \"second\"", line, err)
	}
	pw.Close()
	if _, err := in.readLine(context.Background()); err != errCancelled {
		t.Errorf("read at the end of input: %v, want errCancelled", err)
	}
}
