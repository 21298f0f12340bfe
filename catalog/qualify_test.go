package catalog

import (
	"crypto/sha1"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// h12 is the expected hash suffix, computed independently of identityHash.
func h12(server, tool string) string {
	return fmt.Sprintf("%x", sha1.Sum([]byte(server+"\x00"+tool)))[:12]
}

type id struct{ server, tool string }

func qualifyNames(ids []id, maxLen int) map[id]string {
	tools := make([]Tool, len(ids))
	for i, x := range ids {
		tools[i] = Tool{Server: x.server, Name: x.tool}
	}
	Qualify(tools, maxLen)
	got := make(map[id]string, len(tools))
	for _, t := range tools {
		got[id{t.Server, t.Name}] = t.Qualified
	}
	return got
}

func TestQualify(t *testing.T) {
	long51 := "mcp__srv__" + strings.Repeat("t", 41) // 51 bytes
	tool64 := strings.Repeat("x", 64-len("mcp__srv__"))
	tool65 := strings.Repeat("x", 65-len("mcp__srv__"))
	tests := []struct {
		name   string
		ids    []id
		maxLen int
		want   map[id]string
	}{
		{
			name: "plain",
			ids:  []id{{"fs", "read_file"}, {"fs", "write-file"}, {"Git2", "Log"}},
			want: map[id]string{
				{"fs", "read_file"}:  "mcp__fs__read_file",
				{"fs", "write-file"}: "mcp__fs__write-file",
				{"Git2", "Log"}:      "mcp__Git2__Log",
			},
		},
		{
			name: "dots spaces unicode and bad UTF-8 become one underscore per character",
			ids:  []id{{"s", "a.b c"}, {"s", "café"}, {"s", "🙂x"}, {"s", "\xff\xfe!"}, {"s", "tab\there"}},
			want: map[id]string{
				{"s", "a.b c"}:     "mcp__s__a_b_c",
				{"s", "café"}:      "mcp__s__caf_",
				{"s", "🙂x"}:        "mcp__s___x",
				{"s", "\xff\xfe!"}: "mcp__s_____",
				{"s", "tab\there"}: "mcp__s__tab_here",
			},
		},
		{
			name: "exactly 64 bytes is kept",
			ids:  []id{{"srv", tool64}},
			want: map[id]string{{"srv", tool64}: "mcp__srv__" + tool64},
		},
		{
			name: "65 bytes is hashed and truncated to 64",
			ids:  []id{{"srv", tool65}},
			want: map[id]string{{"srv", tool65}: ("mcp__srv__" + tool65)[:51] + "_" + h12("srv", tool65)},
		},
		{
			name: "a.b and a_b collide after sanitising: both hashed",
			ids:  []id{{"s", "a.b"}, {"s", "a_b"}, {"s", "c"}},
			want: map[id]string{
				{"s", "a.b"}: "mcp__s__a_b_" + h12("s", "a.b"),
				{"s", "a_b"}: "mcp__s__a_b_" + h12("s", "a_b"),
				{"s", "c"}:   "mcp__s__c",
			},
		},
		{
			name: "same tool on two servers",
			ids:  []id{{"one", "search"}, {"two", "search"}},
			want: map[id]string{
				{"one", "search"}: "mcp__one__search",
				{"two", "search"}: "mcp__two__search",
			},
		},
		{
			name: "server and tool boundary: a server with __ is always hashed",
			ids:  []id{{"a__b", "c"}, {"a", "b__c"}},
			want: map[id]string{
				{"a__b", "c"}: "mcp__a__b__c_" + h12("a__b", "c"),
				{"a", "b__c"}: "mcp__a__b__c",
			},
		},
		{
			name: "a server ending in _ is always hashed",
			ids:  []id{{"a_", "b"}, {"a", "_b"}, {"x_", "y"}},
			want: map[id]string{
				{"a_", "b"}: "mcp__a___b_" + h12("a_", "b"),
				{"a", "_b"}: "mcp__a___b",
				{"x_", "y"}: "mcp__x___y_" + h12("x_", "y"),
			},
		},
		{
			name: "a tool named like another's hashed name keeps it; the hashed one gets _2",
			ids:  []id{{"s", "x.y"}, {"s", "x_y"}, {"s", "x_y_" + h12("s", "x.y")}},
			want: map[id]string{
				{"s", "x.y"}:                    "mcp__s__x_y_" + h12("s", "x.y") + "_2",
				{"s", "x_y"}:                    "mcp__s__x_y_" + h12("s", "x_y"),
				{"s", "x_y_" + h12("s", "x.y")}: "mcp__s__x_y_" + h12("s", "x.y"),
			},
		},
		{
			name:   "configurable max length",
			ids:    []id{{"srv", long51[len("mcp__srv__"):]}},
			maxLen: 40,
			want:   map[id]string{{"srv", long51[len("mcp__srv__"):]}: long51[:27] + "_" + h12("srv", long51[len("mcp__srv__"):])},
		},
		{
			name:   "max length 51 keeps a 51-byte name",
			ids:    []id{{"srv", long51[len("mcp__srv__"):]}},
			maxLen: 51,
			want:   map[id]string{{"srv", long51[len("mcp__srv__"):]}: long51},
		},
		{
			name:   "max length below the minimum is raised",
			ids:    []id{{"srv", long51[len("mcp__srv__"):]}},
			maxLen: 5,
			want:   map[id]string{{"srv", long51[len("mcp__srv__"):]}: long51[:MinMaxNameLen-13] + "_" + h12("srv", long51[len("mcp__srv__"):])},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := qualifyNames(tt.ids, tt.maxLen)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Qualify (-want +got):\n%s", diff)
			}
			checkQualified(t, got, tt.maxLen)
		})
	}
}

// checkQualified checks the invariants every result must have.
func checkQualified(t *testing.T, names map[id]string, maxLen int) {
	t.Helper()
	if maxLen <= 0 {
		maxLen = DefaultMaxNameLen
	}
	maxLen = max(maxLen, MinMaxNameLen)
	seen := make(map[string]id)
	for x, n := range names {
		if len(n) > maxLen {
			t.Errorf("%q: %d bytes, max %d", n, len(n), maxLen)
		}
		if !strings.HasPrefix(n, "mcp__") {
			t.Errorf("%q: no mcp__ prefix", n)
		}
		for i := 0; i < len(n); i++ {
			if !nameByte(n[i]) {
				t.Errorf("%q: byte %q outside [A-Za-z0-9_-]", n, n[i])
			}
		}
		if y, dup := seen[n]; dup {
			t.Errorf("%q given to both %q and %q", n, x, y)
		}
		seen[n] = x
	}
}

// collidingTools are two tool names of server "s" whose SHA-1 identity
// hashes share their first 12 hex digits (found offline with Brent's cycle
// finder), and whose readable names are equal once truncated: the worst case
// for the hash suffix.
var collidingTools = [2]string{
	strings.Repeat("a", 50) + collisionX,
	strings.Repeat("a", 50) + collisionY,
}

func TestQualifyHashPrefixCollision(t *testing.T) {
	a, b := collidingTools[0], collidingTools[1]
	if h12("s", a) != h12("s", b) {
		t.Fatalf("fixture: %q and %q do not collide", a, b)
	}
	readable := ("mcp__s__" + a)[:51]
	want := map[id]string{
		{"s", a}: readable + "_" + h12("s", a),
		{"s", b}: readable[:49] + "_" + h12("s", b) + "_2",
	}
	if b < a {
		want[id{"s", a}], want[id{"s", b}] = readable[:49]+"_"+h12("s", a)+"_2", readable+"_"+h12("s", b)
	}
	for _, order := range [][]id{{{"s", a}, {"s", b}}, {{"s", b}, {"s", a}}} {
		got := qualifyNames(order, 0)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Qualify (-want +got):\n%s", diff)
		}
		checkQualified(t, got, 0)
	}
	// Occupy the _2 candidate with a plain name as well: the counter moves on.
	taken := want[id{"s", max(a, b)}]
	third := id{"s", strings.TrimPrefix(taken, "mcp__s__")}
	got := qualifyNames([]id{{"s", a}, {"s", b}, third}, 0)
	checkQualified(t, got, 0)
	if got[third] != taken {
		t.Errorf("plain name %q: got %q", taken, got[third])
	}
	if g := got[id{"s", max(a, b)}]; !strings.HasSuffix(g, "_3") {
		t.Errorf("got %q, want a _3 counter", g)
	}
}

func TestQualifyDeterministic(t *testing.T) {
	var ids []id
	for i := range 300 {
		ids = append(ids,
			id{"s", fmt.Sprintf("t.%d", i%50)},                  // collides with the next
			id{"s", fmt.Sprintf("t_%d", i%50)},                  // (duplicates of identity too)
			id{fmt.Sprintf("srv%d", i%3), "tool"},               // same tool, many servers
			id{"s", strings.Repeat("long", 20) + fmt.Sprint(i)}, // over-long
		)
	}
	ids = append(ids, id{"s", "x_y_" + h12("s", "x.y")}, id{"s", "x.y"}, id{"s", "x_y"})
	ids = append(ids, id{"s", collidingTools[0]}, id{"s", collidingTools[1]})

	// Identical identities are indistinguishable, so compare the multiset of
	// (identity, name) pairs.
	run := func(order []id) map[string]int {
		tools := make([]Tool, len(order))
		for i, x := range order {
			tools[i] = Tool{Server: x.server, Name: x.tool}
		}
		Qualify(tools, 0)
		names := make(map[string]int)
		seen := make(map[string]bool)
		for _, tl := range tools {
			if seen[tl.Qualified] {
				t.Fatalf("duplicate %q", tl.Qualified)
			}
			seen[tl.Qualified] = true
			names[tl.Server+"\x00"+tl.Name+"\x00"+tl.Qualified]++
		}
		return names
	}
	want := run(ids)
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := append([]id(nil), ids...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if diff := cmp.Diff(want, run(shuffled)); diff != "" {
			t.Fatalf("order changed the names (-first +shuffled):\n%s", diff)
		}
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name   string
		filter Filter
		allow  []string
		deny   []string
	}{
		{"zero allows all", Filter{}, []string{"a", "b", ""}, nil},
		{"enabled only", Filter{Enabled: []string{"a", "c"}}, []string{"a", "c"}, []string{"b"}},
		{"empty enabled allows none", Filter{Enabled: []string{}}, nil, []string{"a", "b"}},
		{"disabled only", Filter{Disabled: []string{"b"}}, []string{"a", "c"}, []string{"b"}},
		{"enabled then disabled", Filter{Enabled: []string{"a", "b"}, Disabled: []string{"b", "c"}}, []string{"a"}, []string{"b", "c", "d"}},
		{"raw names, not sanitised", Filter{Enabled: []string{"a.b"}}, []string{"a.b"}, []string{"a_b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range tt.allow {
				if !tt.filter.Allows(n) {
					t.Errorf("Allows(%q) = false, want true", n)
				}
			}
			for _, n := range tt.deny {
				if tt.filter.Allows(n) {
					t.Errorf("Allows(%q) = true, want false", n)
				}
			}
			var tools []Tool
			var want []string
			for _, n := range append(append([]string(nil), tt.allow...), tt.deny...) {
				tools = append(tools, Tool{Name: n})
			}
			want = append(want, tt.allow...)
			var got []string
			for _, tl := range tt.filter.Apply(tools) {
				got = append(got, tl.Name)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Apply (-want +got):\n%s", diff)
			}
		})
	}
}

const collisionX, collisionY = "e9162f813414", "cc7da33f960c"
