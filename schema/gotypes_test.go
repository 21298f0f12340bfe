package schema

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The schema is checked against the Go source of package protocol rather
// than through reflect: the source lists every type and constant of the
// package, so a type or method added there without a schema entry fails
// here, where reflection could only check the types the test names.

// notWireTypes are exported structs of package protocol with json tags that
// are not host-protocol messages.
var notWireTypes = map[string]bool{}

// goPackage is what the test needs of a Go package's source.
type goPackage struct {
	types  map[string]ast.Expr // type name -> its type expression
	consts map[string]any      // constant name -> string or int64 value
}

func parsePackage(t *testing.T, dir string) *goPackage {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := &goPackage{types: map[string]ast.Expr{}, consts: map[string]any{}}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					pkg.types[sp.Name.Name] = sp.Type
				case *ast.ValueSpec:
					if gd.Tok != token.CONST {
						continue
					}
					for i, n := range sp.Names {
						if i < len(sp.Values) {
							if v, ok := constValue(sp.Values[i]); ok {
								pkg.consts[n.Name] = v
							}
						}
					}
				}
			}
		}
	}
	return pkg
}

func constValue(e ast.Expr) (any, bool) {
	neg := false
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, e = true, u.X
	}
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		return nil, false
	}
	switch lit.Kind {
	case token.STRING:
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	case token.INT:
		n, err := strconv.ParseInt(lit.Value, 0, 64)
		if neg {
			n = -n
		}
		return n, err == nil
	}
	return nil, false
}

// goField is one JSON member of a Go struct.
type goField struct {
	name      string
	omitempty bool
	typ       ast.Expr
}

// fields returns the JSON members of struct st, with embedded structs
// inlined.
func (p *goPackage) fields(st *ast.StructType) []goField {
	var out []goField
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag = reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		omit := slices.Contains(strings.Split(opts, ","), "omitempty")
		if len(f.Names) == 0 { // embedded
			if id, ok := f.Type.(*ast.Ident); ok && name == "" {
				if inner, ok := p.types[id.Name].(*ast.StructType); ok {
					out = append(out, p.fields(inner)...)
					continue
				}
			}
			out = append(out, goField{name: name, omitempty: omit, typ: f.Type})
			continue
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			fn := name
			if fn == "" {
				fn = n.Name
			}
			out = append(out, goField{name: fn, omitempty: omit, typ: f.Type})
		}
	}
	return out
}

// wireStructs returns the exported structs of p that have json tags.
func (p *goPackage) wireStructs() []string {
	var names []string
	for name, typ := range p.types {
		st, ok := typ.(*ast.StructType)
		if !ok || !ast.IsExported(name) || notWireTypes[name] {
			continue
		}
		for _, f := range st.Fields.List {
			if f.Tag != nil && strings.Contains(f.Tag.Value, `json:"`) {
				names = append(names, name)
				break
			}
		}
	}
	sort.Strings(names)
	return names
}

// jsonSchema is the part of a schema object the comparison reads.
type jsonSchema struct {
	Ref                  string                 `json:"$ref"`
	Type                 json.RawMessage        `json:"type"`
	Properties           map[string]*jsonSchema `json:"properties"`
	Required             []string               `json:"required"`
	Items                *jsonSchema            `json:"items"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Enum                 []any                  `json:"enum"`
}

func (s *jsonSchema) types() []string {
	if len(s.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(s.Type, &many)
	return many
}

func loadDefs(t *testing.T) (*MetaModel, map[string]*jsonSchema) {
	t.Helper()
	var meta MetaModel
	if err := json.Unmarshal(Document, &meta); err != nil {
		t.Fatal(err)
	}
	defs := map[string]*jsonSchema{}
	for name, raw := range meta.Defs {
		var s jsonSchema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("$defs/%s: %v", name, err)
		}
		defs[name] = &s
	}
	return &meta, defs
}

const defPrefix = "#/$defs/"

// deref follows a $ref to one of defs.
func deref(defs map[string]*jsonSchema, s *jsonSchema) (*jsonSchema, string) {
	if s == nil || s.Ref == "" {
		return s, ""
	}
	name := strings.TrimPrefix(s.Ref, defPrefix)
	return defs[name], name
}

// TestSchemaMatchesGoTypes: every exported struct of package protocol
// with json tags has a $defs entry of the same name with the same members,
// and their types agree; members the sidecar always sends are required,
// members it may leave out are not.
func TestSchemaMatchesGoTypes(t *testing.T) {
	pkg := parsePackage(t, "../protocol")
	meta, defs := loadDefs(t)
	sent := sidecarSentDefs(t, meta)
	for _, name := range pkg.wireStructs() {
		t.Run(name, func(t *testing.T) {
			def := defs[name]
			if def == nil {
				t.Fatalf("protocol.%s has no entry in $defs of schema/protocol.schema.json (see schema/README.md)", name)
			}
			fields := pkg.fields(pkg.types[name].(*ast.StructType))
			var goNames, schemaNames []string
			for _, f := range fields {
				goNames = append(goNames, f.name)
			}
			for p := range def.Properties {
				schemaNames = append(schemaNames, p)
			}
			sort.Strings(goNames)
			sort.Strings(schemaNames)
			if diff := cmp.Diff(goNames, schemaNames); diff != "" {
				t.Errorf("members of protocol.%s (-Go +schema):\n%s", name, diff)
			}
			for _, f := range fields {
				prop := def.Properties[f.name]
				if prop == nil {
					continue
				}
				if err := pkg.agree(defs, f.typ, prop); err != nil {
					t.Errorf("%s.%s: %v", name, f.name, err)
				}
				if sent[name] {
					required := slices.Contains(def.Required, f.name)
					if required == f.omitempty {
						t.Errorf("%s.%s: the sidecar sends it %s, but the schema has it %s", name, f.name,
							map[bool]string{true: "only when set (omitempty)", false: "always"}[f.omitempty],
							map[bool]string{true: "required", false: "optional"}[required])
					}
				}
			}
		})
	}
}

// agree reports whether Go type expression typ and schema s describe the
// same JSON.
func (p *goPackage) agree(defs map[string]*jsonSchema, typ ast.Expr, s *jsonSchema) error {
	switch x := typ.(type) {
	case *ast.StarExpr:
		return p.agree(defs, x.X, s)
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "json" && x.Sel.Name == "RawMessage" {
			return nil // any JSON: the schema says which
		}
		return fmt.Errorf("type %s.%s is not known to the comparison", x.X, x.Sel.Name)
	case *ast.InterfaceType:
		return nil
	case *ast.ArrayType:
		t, _ := deref(defs, s)
		if t == nil || !slices.Contains(t.types(), "array") {
			return fmt.Errorf("Go has a slice, the schema %v", t.types())
		}
		if t.Items == nil {
			return fmt.Errorf("array without items")
		}
		return p.agree(defs, x.Elt, t.Items)
	case *ast.MapType:
		t, _ := deref(defs, s)
		if t == nil || !slices.Contains(t.types(), "object") {
			return fmt.Errorf("Go has a map, the schema %v", t.types())
		}
		if len(t.AdditionalProperties) == 0 {
			return nil // values unconstrained
		}
		var ap jsonSchema
		if err := json.Unmarshal(t.AdditionalProperties, &ap); err != nil {
			return fmt.Errorf("additionalProperties: %v", err)
		}
		return p.agree(defs, x.Value, &ap)
	case *ast.Ident:
		want := map[string]string{
			"string": "string", "bool": "boolean",
			"int": "integer", "int32": "integer", "int64": "integer", "uint64": "integer",
			"float64": "number", "float32": "number", "any": "",
		}
		if jt, ok := want[x.Name]; ok {
			if jt == "" {
				return nil
			}
			t, _ := deref(defs, s)
			if t == nil {
				return fmt.Errorf("$ref %s does not resolve", s.Ref)
			}
			if !slices.Contains(t.types(), jt) || len(t.types()) != 1 {
				return fmt.Errorf("Go has %s, the schema type %v (want %q)", x.Name, t.types(), jt)
			}
			return nil
		}
		under, ok := p.types[x.Name]
		if !ok {
			return fmt.Errorf("type %s is not known to the comparison", x.Name)
		}
		if _, isStruct := under.(*ast.StructType); isStruct {
			if s.Ref != defPrefix+x.Name {
				return fmt.Errorf("Go has struct %s, the schema should say {\"$ref\": %q}", x.Name, defPrefix+x.Name)
			}
			return nil
		}
		return p.agree(defs, under, s)
	}
	return fmt.Errorf("Go type %T is not known to the comparison", typ)
}

// sidecarSentDefs returns the $defs reachable from what the sidecar sends:
// results of requests, params of its notifications and requests, and error
// data.
func sidecarSentDefs(t *testing.T, meta *MetaModel) map[string]bool {
	var roots []json.RawMessage
	for _, r := range meta.Requests {
		roots = append(roots, r.Result)
	}
	for _, n := range meta.Notifications {
		if n.MessageDirection == "sidecarToHost" {
			roots = append(roots, n.Params)
		}
	}
	for _, r := range meta.HostRequests {
		roots = append(roots, r.Params)
	}
	roots = append(roots, json.RawMessage(`{"$ref":"#/$defs/ErrorData"}`))
	seen := map[string]bool{}
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		var visit func(v any)
		visit = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				if ref, ok := x["$ref"].(string); ok {
					name := strings.TrimPrefix(ref, defPrefix)
					if !seen[name] {
						seen[name] = true
						walk(meta.Defs[name])
					}
				}
				for _, e := range x {
					visit(e)
				}
			case []any:
				for _, e := range x {
					visit(e)
				}
			}
		}
		visit(v)
	}
	for _, r := range roots {
		walk(r)
	}
	return seen
}

// TestSchemaMatchesGoConstants: the methods, error codes and kinds, and
// the enumerations of package protocol are the schema's.
func TestSchemaMatchesGoConstants(t *testing.T) {
	pkg := parsePackage(t, "../protocol")
	meta, defs := loadDefs(t)
	byPrefix := func(prefixes ...string) []string {
		var out []string
		for name, v := range pkg.consts {
			for _, p := range prefixes {
				if s, ok := v.(string); ok && strings.HasPrefix(name, p) && len(name) > len(p) {
					out = append(out, s)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	sorted := func(s []string) []string { sort.Strings(s); return s }

	var hostMethods, sidecarNotes, hostRequests []string
	for _, r := range meta.Requests {
		hostMethods = append(hostMethods, r.Method)
	}
	for _, n := range meta.Notifications {
		if n.MessageDirection == "hostToSidecar" {
			hostMethods = append(hostMethods, n.Method)
		}
	}
	for _, n := range meta.Notifications {
		// A notification both sides send ($/cancelRequest) has its
		// Method* constant only.
		if n.MessageDirection == "sidecarToHost" && !slices.Contains(hostMethods, n.Method) {
			sidecarNotes = append(sidecarNotes, n.Method)
		}
	}
	for _, r := range meta.HostRequests {
		hostRequests = append(hostRequests, r.Method)
	}
	var kinds []string
	var codes []int64
	for _, e := range meta.Errors {
		kinds = append(kinds, e.Kind)
		if e.Code != nil && !slices.Contains(codes, *e.Code) {
			codes = append(codes, *e.Code) // several kinds may share a code
		}
	}
	var goCodes []int64
	for name, v := range pkg.consts {
		if n, ok := v.(int64); ok && strings.HasPrefix(name, "Code") {
			goCodes = append(goCodes, n)
		}
	}
	slices.Sort(codes)
	slices.Sort(goCodes)
	enum := func(def, prop string) []string {
		s := defs[def]
		if prop != "" {
			s, _ = deref(defs, s.Properties[prop])
		}
		var out []string
		for _, v := range s.Enum {
			out = append(out, fmt.Sprint(v))
		}
		return sorted(out)
	}

	for _, c := range []struct {
		what           string
		inGo, inSchema any
	}{
		{"host to sidecar methods (Method*)", byPrefix("Method"), sorted(hostMethods)},
		{"sidecar notifications (Notify*)", byPrefix("Notify"), sorted(sidecarNotes)},
		{"sidecar requests (Request*)", byPrefix("Request"), sorted(hostRequests)},
		{"error kinds (Kind*)", byPrefix("Kind"), sorted(kinds)},
		{"error codes (Code*)", goCodes, codes},
		{"server states (State*)", byPrefix("State"), enum("State", "")},
		{"catalog sources (Catalog*)", byPrefix("Catalog"), enum("ServerCatalog", "catalog")},
		{"startup statuses (Status*)", byPrefix("Status"), enum("StartupStatusParams", "status")},
		{"toolsChanged reasons (Reason*)", byPrefix("Reason"), enum("ToolsChangedParams", "reason")},
		{"listChanged lists (List*)", byPrefix("List"), enum("ListChangedParams", "list")},
	} {
		if diff := cmp.Diff(c.inGo, c.inSchema); diff != "" {
			t.Errorf("%s (-Go +schema):\n%s", c.what, diff)
		}
	}
	if v, ok := pkg.consts["Version"].(int64); !ok || int(v) != meta.ProtocolVersion {
		t.Errorf("protocol.Version is %v, the schema's protocolVersion %d", pkg.consts["Version"], meta.ProtocolVersion)
	}
}
