package catalog

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fuzzIDs turns fuzz bytes into identities: one per line, "server/tool"
// (no "/" means the server "s").
func fuzzIDs(data []byte) []id {
	var ids []id
	for _, line := range bytes.Split(data, []byte("\n")) {
		server, tool, ok := strings.Cut(string(line), "/")
		if !ok {
			server, tool = "s", server
		}
		ids = append(ids, id{server, tool})
	}
	return ids
}

func FuzzQualify(f *testing.F) {
	f.Add([]byte("a.b\na_b\nx"), 64)
	f.Add([]byte("one/search\ntwo/search\na__b/c\na/b__c"), 0)
	f.Add([]byte("s/"+collidingTools[0]+"\ns/"+collidingTools[1]), 64)
	f.Add([]byte(strings.Repeat("x", 80)+"\n"+strings.Repeat("x", 81)+"\ncafé\n🙂"), 33)
	f.Fuzz(func(t *testing.T, data []byte, maxLen int) {
		maxLen %= 200 // keep names small; negative values test the default
		ids := fuzzIDs(data)
		tools := make([]Tool, len(ids))
		for i, x := range ids {
			tools[i] = Tool{Server: x.server, Name: x.tool}
		}
		Qualify(tools, maxLen)

		limit := maxLen
		if limit <= 0 {
			limit = DefaultMaxNameLen
		}
		limit = max(limit, MinMaxNameLen)
		seen := make(map[string]bool, len(tools))
		count := make(map[string]int)
		for _, tl := range tools {
			count[readableName(tl.Server, tl.Name)]++
		}
		for _, tl := range tools {
			q := tl.Qualified
			if seen[q] {
				t.Fatalf("duplicate %q", q)
			}
			seen[q] = true
			if len(q) > limit || len(q) == 0 {
				t.Fatalf("%q: %d bytes, limit %d", q, len(q), limit)
			}
			for i := 0; i < len(q); i++ {
				if !nameByte(q[i]) {
					t.Fatalf("%q: byte %q outside the charset", q, q[i])
				}
			}
			r := readableName(tl.Server, tl.Name)
			if plainServer(tl.Server) && len(r) <= limit && count[r] == 1 && q != r {
				t.Fatalf("%q renamed to %q though it fits and is unique", r, q)
			}
		}

		// Reversed input order gives the same names (as a multiset per
		// identity: equal identities are interchangeable).
		rev := make([]Tool, len(tools))
		for i, tl := range tools {
			rev[len(tools)-1-i] = Tool{Server: tl.Server, Name: tl.Name}
		}
		Qualify(rev, maxLen)
		names := func(ts []Tool) map[string]int {
			m := make(map[string]int)
			for _, tl := range ts {
				m[tl.Server+"\x00"+tl.Name+"\x00"+tl.Qualified]++
			}
			return m
		}
		if diff := cmp.Diff(names(tools), names(rev)); diff != "" {
			t.Fatalf("order changed the names (-forward +reversed):\n%s", diff)
		}
	})
}

func FuzzDiskCacheDecode(f *testing.F) {
	valid, err := encodeEntry(writerEntry(1, 2), testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte(`{"version":2,"server":"s","scopeKey":"` + testKey + `","tools":[]}`))
	f.Add([]byte(`{"version":1e400}`))
	f.Add([]byte(`{"tools":[{}],"listedAt":"not a time"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data, testKey)
		if err != nil {
			if e != nil {
				t.Fatal("entry returned with an error")
			}
			return
		}
		if e.Version != CacheVersion || e.ScopeKey != testKey || e.Server == "" || e.Tools == nil {
			t.Fatalf("accepted an invalid entry: %+v", e)
		}
		// Whatever was accepted stores and loads back the same.
		again, err := encodeEntry(e, testKey)
		if err != nil {
			t.Fatalf("accepted entry does not encode: %v", err)
		}
		e2, err := decodeEntry(again, testKey)
		if err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		if diff := cmp.Diff(rawStrings(e.Tools), rawStrings(e2.Tools)); diff != "" || e.Server != e2.Server || !e.ListedAt.Equal(e2.ListedAt) {
			t.Fatalf("round trip changed the entry: %s", diff)
		}
	})
}

// TestCommittedCacheSeed keeps the committed valid seed valid: a change of
// the file format must come with a new seed (and a new CacheVersion).
func TestCommittedCacheSeed(t *testing.T) {
	b, err := os.ReadFile("testdata/fuzz/FuzzDiskCacheDecode/valid")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") {
		t.Fatalf("unexpected corpus file:\n%s", b)
	}
	data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := decodeEntry([]byte(data), testKey)
	if err != nil {
		t.Fatalf("committed seed no longer decodes: %v", err)
	}
	if len(e.Tools) != 2 || !strings.Contains(string(e.Tools[0]), "12345678901234567890") {
		t.Errorf("unexpected tools %s", rawStrings(e.Tools))
	}
}
