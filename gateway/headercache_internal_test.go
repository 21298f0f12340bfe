package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/mcpheader"
)

// TestHeaderCache: declarations looked up are kept until the catalog
// changes; a lookup that overlapped a change is not kept, since it may
// have read the catalog before the change.
func TestHeaderCache(t *testing.T) {
	decl, err := mcpheader.Parse([]byte(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var hc headerCache
	_, gen, ok := hc.get("where")
	if ok {
		t.Fatal("an empty cache has the tool")
	}
	hc.put("where", decl, gen)
	got, _, ok := hc.get("where")
	if !ok || !cmp.Equal(got, decl) {
		t.Fatalf("get after put = %v, %v; want the declarations", got, ok)
	}

	hc.forget()
	if _, _, ok := hc.get("where"); ok {
		t.Error("the tool is still cached after the catalog changed")
	}

	_, gen, _ = hc.get("where")
	hc.forget() // the catalog changes while the lookup runs
	hc.put("where", decl, gen)
	if _, _, ok := hc.get("where"); ok {
		t.Error("a lookup that overlapped a catalog change was kept")
	}
}
