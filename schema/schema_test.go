package schema

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDocumentIsFormatted keeps protocol.schema.json in one layout (two
// spaces, as json.Indent writes it), so that entries added by several
// people merge line by line.
func TestDocumentIsFormatted(t *testing.T) {
	var want bytes.Buffer
	if err := json.Indent(&want, Document, "", "  "); err != nil {
		t.Fatal(err)
	}
	want.WriteByte('\n')
	if !bytes.Equal(bytes.TrimRight(Document, "\n"), bytes.TrimRight(want.Bytes(), "\n")) {
		t.Errorf("protocol.schema.json is not indented as json.Indent(doc, \"\", \"  \") writes it (jq --indent 2 . does the same)")
	}
}

// TestEveryDefResolves: every type of $defs is a schema whose references
// resolve, used or not.
func TestEveryDefResolves(t *testing.T) {
	m, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(Document, &root); err != nil {
		t.Fatal(err)
	}
	c, err := newCompiler(Document)
	if err != nil {
		t.Fatal(err)
	}
	for name := range root.Defs {
		if _, err := c.resolve(json.RawMessage(`{"$ref":"#/$defs/` + name + `"}`)); err != nil {
			t.Errorf("$defs/%s: %v", name, err)
		}
	}
	if m.Meta.ProtocolVersion < 1 {
		t.Errorf("protocolVersion %d", m.Meta.ProtocolVersion)
	}
}
