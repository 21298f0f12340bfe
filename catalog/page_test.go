package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func raws(ss ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		out[i] = json.RawMessage(s)
	}
	return out
}

func rawStrings(rs []json.RawMessage) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func TestDecodePage(t *testing.T) {
	item1 := `{"name":"big","inputSchema":{"type":"object","z":1,"a":12345678901234567890,"x-unknown":{"k":[1.50,2e10]}}}`
	item2 := `{ "name" : "ws",  "inputSchema" : { "b":true , "a":null }, "description":"<&>\u00e9" }`
	tests := []struct {
		name     string
		result   string
		key      string
		want     []string
		wantNext string
		wantErr  string
	}{
		{"raw bytes kept", `{"tools":[` + item1 + `,` + item2 + `],"nextCursor":"c1"}`, "tools", []string{item1, item2}, "c1", ""},
		{"whitespace around", " \n{ \"other\": {\"x\":[1,2]}, \"tools\" : [ " + item1 + " ] }\n", "tools", []string{item1}, "", ""},
		{"null cursor", `{"tools":[],"nextCursor":null}`, "tools", []string{}, "", ""},
		{"empty cursor", `{"tools":[{"a":1}],"nextCursor":""}`, "tools", []string{`{"a":1}`}, "", ""},
		{"null list", `{"tools":null}`, "tools", []string{}, "", ""},
		{"other key", `{"prompts":[{"name":"p"}],"tools":[1]}`, "prompts", []string{`{"name":"p"}`}, "", ""},
		{"missing key", `{"resources":[]}`, "tools", nil, "", `no "tools" member`},
		{"not an object", `[{"tools":[]}]`, "tools", nil, "", "not a JSON object"},
		{"list not an array", `{"tools":{"a":1}}`, "tools", nil, "", "not an array"},
		{"cursor not a string", `{"tools":[],"nextCursor":5}`, "tools", nil, "", "nextCursor"},
		{"trailing data", `{"tools":[]} {}`, "tools", nil, "", "data after"},
		{"truncated", `{"tools":[{"a":1}`, "tools", nil, "", "tools page"},
		{"duplicate key", `{"tools":[],"tools":[]}`, "tools", nil, "", "duplicate"},
		{"empty", ``, "tools", nil, "", "unexpected EOF"},
		{"invalid item", `{"tools":[{"a":}]}`, "tools", nil, "", "item #0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, next, err := DecodePage(json.RawMessage(tt.result), tt.key)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rawStrings(items)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if next != tt.wantNext {
				t.Errorf("next = %q, want %q", next, tt.wantNext)
			}
		})
	}
}

// pages serves fixed results by cursor and records the cursors asked for.
type pages struct {
	byCursor map[string]string
	asked    []string
}

func (p *pages) fetch(_ context.Context, cursor string) (json.RawMessage, error) {
	p.asked = append(p.asked, cursor)
	r, ok := p.byCursor[cursor]
	if !ok {
		return nil, fmt.Errorf("unknown cursor %q", cursor)
	}
	return json.RawMessage(r), nil
}

func TestPaginate(t *testing.T) {
	three := map[string]string{
		"":   `{"tools":[{"n":1},{"n":2}],"nextCursor":"p2"}`,
		"p2": `{"tools":[{"n":3}],"nextCursor":"p3"}`,
		"p3": `{"tools":[{"n":4}]}`,
	}
	bigCursor := strings.Repeat("c", 100)
	tests := []struct {
		name      string
		byCursor  map[string]string
		limits    PageLimits
		want      []string
		wantAsked []string
		wantLimit string // LimitError.Limit
		wantErr   string
	}{
		{name: "three pages", byCursor: three, want: []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`}, wantAsked: []string{"", "p2", "p3"}},
		{name: "empty catalog", byCursor: map[string]string{"": `{"tools":[]}`}, want: []string{}, wantAsked: []string{""}},
		{name: "exactly MaxPages", byCursor: three, limits: PageLimits{MaxPages: 3}, want: []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`}, wantAsked: []string{"", "p2", "p3"}},
		{name: "exactly MaxItems", byCursor: three, limits: PageLimits{MaxItems: 4}, want: []string{`{"n":1}`, `{"n":2}`, `{"n":3}`, `{"n":4}`}, wantAsked: []string{"", "p2", "p3"}},
		{name: "MaxPages", byCursor: three, limits: PageLimits{MaxPages: 2}, wantAsked: []string{"", "p2"}, wantLimit: LimitPages, wantErr: "more than 2 pages"},
		{name: "MaxItems", byCursor: three, limits: PageLimits{MaxItems: 3}, wantAsked: []string{"", "p2", "p3"}, wantLimit: LimitItems, wantErr: "more than 3 items"},
		{
			name: "repeated cursor",
			byCursor: map[string]string{
				"":  `{"tools":[{}],"nextCursor":"a"}`,
				"a": `{"tools":[{}],"nextCursor":"b"}`,
				"b": `{"tools":[{}],"nextCursor":"a"}`,
			},
			wantAsked: []string{"", "a", "b"}, wantLimit: LimitCursorRepeat, wantErr: "repeats",
		},
		{
			name:      "cursor size",
			byCursor:  map[string]string{"": `{"tools":[],"nextCursor":"` + bigCursor + `"}`},
			limits:    PageLimits{MaxCursorBytes: 99},
			wantAsked: []string{""}, wantLimit: LimitCursorBytes, wantErr: "over 99 bytes",
		},
		{
			name:      "cursor at the size limit",
			byCursor:  map[string]string{"": `{"tools":[],"nextCursor":"` + bigCursor + `"}`, bigCursor: `{"tools":[{}]}`},
			limits:    PageLimits{MaxCursorBytes: 100},
			want:      []string{`{}`},
			wantAsked: []string{"", bigCursor},
		},
		{
			name:      "fetch error",
			byCursor:  map[string]string{"": `{"tools":[],"nextCursor":"gone"}`},
			wantAsked: []string{"", "gone"}, wantErr: `tools list page 2: unknown cursor "gone"`,
		},
		{
			name:      "bad page",
			byCursor:  map[string]string{"": `{"tools":[],"nextCursor":"x"}`, "x": `{"tools":7}`},
			wantAsked: []string{"", "x"}, wantErr: "page 2: tools page",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pages{byCursor: tt.byCursor}
			got, err := Paginate(context.Background(), "tools", tt.limits, p.fetch)
			if diff := cmp.Diff(tt.wantAsked, p.asked); diff != "" {
				t.Errorf("cursors fetched (-want +got):\n%s", diff)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				var le *LimitError
				if isLimit := errors.As(err, &le); isLimit != (tt.wantLimit != "") {
					t.Fatalf("err %v: LimitError = %v, want %v", err, isLimit, tt.wantLimit != "")
				} else if isLimit {
					if le.Limit != tt.wantLimit {
						t.Errorf("Limit = %q, want %q", le.Limit, tt.wantLimit)
					}
					if !errors.Is(err, ErrPageLimit) {
						t.Errorf("errors.Is(%v, ErrPageLimit) = false", err)
					}
				}
				if got != nil {
					t.Errorf("partial result %v returned with an error", rawStrings(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rawStrings(got)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPaginateDefaultLimits(t *testing.T) {
	// A server that never stops: the default page cap ends it.
	n := 0
	fetch := func(_ context.Context, cursor string) (json.RawMessage, error) {
		n++
		return json.RawMessage(fmt.Sprintf(`{"tools":[],"nextCursor":"c%d"}`, n)), nil
	}
	_, err := Paginate(context.Background(), "tools", PageLimits{}, fetch)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != LimitPages || le.Max != 100 {
		t.Fatalf("err = %v, want the 100-page limit", err)
	}
	if n != 100 {
		t.Errorf("fetched %d pages, want 100", n)
	}
}

func TestPaginateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fetch := func(ctx context.Context, cursor string) (json.RawMessage, error) {
		cancel() // the context ends while page 1 is in flight
		return json.RawMessage(`{"tools":[{}],"nextCursor":"more"}`), nil
	}
	if _, err := Paginate(ctx, "tools", PageLimits{}, fetch); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestParseTools(t *testing.T) {
	good := `{"name":"n","title":"T","description":"D","inputSchema":{"type":"object","b":1,"a":12345678901234567890},` +
		`"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":"v"},"x-extra":[1]}`
	tools, err := ParseTools("srv", raws(good, `{"name":"m","inputSchema":{},"outputSchema":null}`))
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Server, Name, Title, Description, Raw, In, Out, Ann, Meta string
	}
	var got []view
	for _, tl := range tools {
		got = append(got, view{tl.Server, tl.Name, tl.Title, tl.Description, string(tl.Raw),
			string(tl.InputSchema), string(tl.OutputSchema), string(tl.Annotations), string(tl.Meta)})
	}
	want := []view{
		{"srv", "n", "T", "D", good, `{"type":"object","b":1,"a":12345678901234567890}`, `{"type":"object"}`, `{"readOnlyHint":true}`, `{"k":"v"}`},
		{"srv", "m", "", "", `{"name":"m","inputSchema":{},"outputSchema":null}`, `{}`, "", "", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseTools (-want +got):\n%s", diff)
	}
	tools[0].Qualified = "mcp__srv__n"
	wire, err := tools[0].WireJSON()
	if err != nil {
		t.Fatal(err)
	}
	wantWire := `{"name":"mcp__srv__n","server":"srv","tool":"n","title":"T","description":"D","inputSchema":{"type":"object","b":1,"a":12345678901234567890},` +
		`"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":"v"},"x-extra":[1]}`
	if string(wire) != wantWire {
		t.Errorf("WireJSON:\n got %s\nwant %s", wire, wantWire)
	}

	errTests := []struct {
		name  string
		items []string
		want  string
	}{
		{"not an object", []string{`[]`}, `server "srv": tool #0: not a JSON object`},
		{"no name", []string{`{"inputSchema":{}}`}, "no name"},
		{"empty name", []string{`{"name":"","inputSchema":{}}`}, "empty name"},
		{"name not a string", []string{`{"name":3,"inputSchema":{}}`}, "tool #0"},
		{"no inputSchema", []string{`{"name":"a"}`}, `tool "a": no inputSchema`},
		{"null inputSchema", []string{`{"name":"a","inputSchema":null}`}, `tool "a": no inputSchema`},
		{"inputSchema not an object", []string{`{"name":"a","inputSchema":true}`}, "inputSchema is not an object"},
		{"outputSchema not an object", []string{`{"name":"a","inputSchema":{},"outputSchema":[]}`}, "outputSchema is not an object"},
		{"annotations not an object", []string{`{"name":"a","inputSchema":{},"annotations":1}`}, "annotations is not an object"},
		{"title not a string", []string{`{"name":"a","inputSchema":{},"title":{}}`}, "title: not a string"},
		{"invalid JSON", []string{`{"name":"a",}`}, "tool #0"},
		{"duplicate", []string{`{"name":"a","inputSchema":{}}`, `{"name":"b","inputSchema":{}}`, `{"name":"a","inputSchema":{"x":1}}`}, `server "srv": tool "a" listed twice (#0 and #2)`},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTools("srv", raws(tt.items...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
