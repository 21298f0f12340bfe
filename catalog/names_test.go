package catalog

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNamesStableInASession: catalogs named one after the other by one
// Names, as a session's catalog changes. A tool keeps its name; a name is
// never given to another tool, so a host holding it reaches that tool or
// none (redteam F16: a tool added on one server renamed another server's
// tool).
func TestNamesStableInASession(t *testing.T) {
	type step struct {
		catalog []id
		want    map[id]string // the names of some of the catalog's tools
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a tool added on server a leaves server a__b's tool alone", []step{
			{[]id{{"a__b", "c"}, {"a", "x"}}, map[id]string{{"a__b", "c"}: "mcp__a__b__c_" + h12("a__b", "c"), {"a", "x"}: "mcp__a__x"}},
			{[]id{{"a__b", "c"}, {"a", "x"}, {"a", "b__c"}}, map[id]string{{"a__b", "c"}: "mcp__a__b__c_" + h12("a__b", "c"), {"a", "x"}: "mcp__a__x", {"a", "b__c"}: "mcp__a__b__c"}},
		}},
		{"the first holder keeps a colliding name; the newcomer is hashed", []step{
			{[]id{{"s", "x_y"}}, map[id]string{{"s", "x_y"}: "mcp__s__x_y"}},
			{[]id{{"s", "x_y"}, {"s", "x.y"}}, map[id]string{{"s", "x_y"}: "mcp__s__x_y", {"s", "x.y"}: "mcp__s__x_y_" + h12("s", "x.y")}},
		}},
		{"a name whose tool left is not given to another; the tool gets it back", []step{
			{[]id{{"s", "x.y"}}, map[id]string{{"s", "x.y"}: "mcp__s__x_y"}},
			{[]id{{"s", "x_y"}}, map[id]string{{"s", "x_y"}: "mcp__s__x_y_" + h12("s", "x_y")}},
			{[]id{{"s", "x_y"}, {"s", "x.y"}}, map[id]string{{"s", "x_y"}: "mcp__s__x_y_" + h12("s", "x_y"), {"s", "x.y"}: "mcp__s__x_y"}},
		}},
		{"a tool named like another's hashed name does not take it", []step{
			{[]id{{"a__b", "c"}}, map[id]string{{"a__b", "c"}: "mcp__a__b__c_" + h12("a__b", "c")}},
			{[]id{{"a__b", "c"}, {"a", "b__c_" + h12("a__b", "c")}}, map[id]string{
				{"a__b", "c"}:                     "mcp__a__b__c_" + h12("a__b", "c"),
				{"a", "b__c_" + h12("a__b", "c")}: "mcp__a__b__c_" + h12("a__b", "c") + "_" + h12("a", "b__c_"+h12("a__b", "c")),
			}},
		}},
		{"a server restarting (its tools leave and return) keeps its names", []step{
			{[]id{{"one", "search"}, {"two", "search"}}, map[id]string{{"one", "search"}: "mcp__one__search", {"two", "search"}: "mcp__two__search"}},
			{[]id{{"two", "search"}}, map[id]string{{"two", "search"}: "mcp__two__search"}},
			{[]id{{"one", "search"}, {"two", "search"}}, map[id]string{{"one", "search"}: "mcp__one__search", {"two", "search"}: "mcp__two__search"}},
		}},
		{"duplicates of one identity keep their names", []step{
			{[]id{{"s", "d"}, {"s", "d"}}, nil},
			{[]id{{"s", "d"}, {"s", "d"}, {"s", "e"}}, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n Names
			prev := map[id][]string{}
			for i, st := range tc.steps {
				tools := make([]Tool, len(st.catalog))
				for j, x := range st.catalog {
					tools[j] = Tool{Server: x.server, Name: x.tool}
				}
				n.Qualify(tools)
				got := map[id][]string{}
				seen := map[string]bool{}
				for _, tl := range tools {
					if seen[tl.Qualified] {
						t.Fatalf("step %d: %q given twice", i, tl.Qualified)
					}
					seen[tl.Qualified] = true
					x := id{tl.Server, tl.Name}
					got[x] = append(got[x], tl.Qualified)
					if s, tool, ok := n.Holder(tl.Qualified); !ok || s != tl.Server || tool != tl.Name {
						t.Errorf("step %d: Holder(%q) = %q %q %v", i, tl.Qualified, s, tool, ok)
					}
				}
				for x, w := range st.want {
					if g := got[x]; len(g) != 1 || g[0] != w {
						t.Errorf("step %d: %v named %q, want %q", i, x, g, w)
					}
				}
				// A tool present before keeps its name(s).
				for x, names := range got {
					if before, ok := prev[x]; ok && len(before) <= len(names) {
						if diff := cmp.Diff(before, names[:len(before)]); diff != "" {
							t.Errorf("step %d: %v renamed (-before +now):\n%s", i, x, diff)
						}
					}
				}
				for x, names := range got {
					prev[x] = names
				}
			}
		})
	}
}

// TestNamesRetiredBounded: a server that lists new tool names without end
// does not grow a session's memory without end.
func TestNamesRetiredBounded(t *testing.T) {
	var n Names
	for round := range 3 * MaxRetiredNames / 100 {
		tools := make([]Tool, 100)
		for i := range tools {
			tools[i] = Tool{Server: "s", Name: fmt.Sprintf("t%d_%d", round, i)}
		}
		n.Qualify(tools)
		if len(n.given) > len(tools)+MaxRetiredNames || len(n.retired) > 2*MaxRetiredNames+len(tools) {
			t.Fatalf("round %d: %d names given, %d retired kept", round, len(n.given), len(n.retired))
		}
	}
	// The most recent retired names are still refused to others.
	if _, _, ok := n.Holder("mcp__s__t" + fmt.Sprint(3*MaxRetiredNames/100-2) + "_0"); !ok {
		t.Error("a name retired one round ago was forgotten")
	}
}
