package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// outputFile is the content of the file that keeps a cut result whole.
type outputFile struct {
	format, ext string
	data        []byte
	// lines are, for a text file, the line each text block starts at
	// (from 1; 0 for other blocks).
	lines []int
}

// file is what keeps r whole: the text of its text blocks when that is all
// it holds (a file a model reads in parts, by lines), else the result as
// the server sent it, indented.
func (r *toolResult) file(raw []byte) outputFile {
	allText := r.structured == nil
	for _, b := range r.blocks {
		allText = allText && b.isText
	}
	if !allText {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			buf.Reset()
			buf.Write(raw)
		}
		buf.WriteByte('\n')
		return outputFile{format: protocol.OutputFileJSON, ext: "json", data: buf.Bytes()}
	}
	f := outputFile{format: protocol.OutputFileText, ext: "txt", lines: make([]int, len(r.blocks))}
	line := 1
	for i, b := range r.blocks {
		f.lines[i] = line
		f.data = append(f.data, b.text...)
		if !strings.HasSuffix(b.text, "\n") {
			f.data = append(f.data, '\n')
		}
		line += strings.Count(b.text, "\n")
		if !strings.HasSuffix(b.text, "\n") {
			line++
		}
	}
	return f
}

// marker is the text block that tells the model (and the person reading
// along) what was left out and where the whole result is.
func marker(r *toolResult, p cutPlan, cut *protocol.OutputCut, f outputFile, what string) string {
	var left []string
	text := f.format == protocol.OutputFileText && cut.File != ""
	if p.cutBlock >= 0 {
		if text {
			line := f.lines[p.cutBlock] + strings.Count(p.cutText, "\n")
			left = append(left, "the rest of the text, from line "+thousands(line)+" of the file")
		} else {
			left = append(left, fmt.Sprintf("the rest of text block %d", p.cutBlock+1))
		}
	}
	const listed = 5
	for n, i := range p.omitted {
		if n == listed {
			left = append(left, fmt.Sprintf("%d more blocks", len(p.omitted)-listed))
			break
		}
		b := r.blocks[i]
		switch {
		case b.isText && text:
			left = append(left, fmt.Sprintf("text block %d (from line %s of the file)", i+1, thousands(f.lines[i])))
		case b.kind == "text" || b.kind == "image" || b.kind == "audio" || b.kind == "resource" || b.kind == "resource_link":
			left = append(left, fmt.Sprintf("%s block %d", b.kind, i+1))
		default:
			left = append(left, fmt.Sprintf("block %d", i+1))
		}
	}
	if p.dropStructured {
		left = append(left, "structuredContent")
	}
	var m strings.Builder
	fmt.Fprintf(&m, "[mcp-sidecar cut this result of %s: it is about %s tokens, over its limit of %s, so about %s are shown. Left out: %s.",
		what, thousands(cut.OriginalTokens), thousands(cut.Limit), thousands(cut.KeptTokens), strings.Join(left, ", "))
	switch {
	case cut.File == "":
		m.WriteString(" The whole result could not be kept; call the tool again asking for less.]")
	case f.format == protocol.OutputFileText:
		fmt.Fprintf(&m, " The whole text is in the file %s until this session ends: read the rest there, a part at a time, or call the tool again asking for less.]", cut.File)
	default:
		fmt.Fprintf(&m, " The whole result, as JSON, is in the file %s until this session ends: read the rest there, a part at a time, or call the tool again asking for less.]", cut.File)
	}
	return m.String()
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	first := len(s) % 3
	if first > 0 {
		b.WriteString(s[:first])
	}
	for i := first; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// render writes the cut result: the server's members in their order, with
// content holding the blocks kept (the cut one with its text shortened)
// and the marker last, structuredContent left out if so planned, and
// _meta (the server's, kept) with the sidecar's account added.
func (r *toolResult) render(p cutPlan, markerText string, cut protocol.OutputCut) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	sep := func() {
		if !first {
			buf.WriteByte(',')
		}
		first = false
	}
	hasMeta := false
	for _, m := range r.members {
		switch m.key {
		case "structuredContent":
			if p.dropStructured {
				continue
			}
		case "content":
			sep()
			buf.WriteString(`"content":[`)
			n := 0
			for i, b := range r.blocks {
				var item []byte
				switch {
				case p.keep[i]:
					item = b.raw
				case i == p.cutBlock:
					var err error
					if item, err = replaceMember(b.raw, "text", p.cutText); err != nil {
						return nil, err
					}
				default:
					continue
				}
				if n > 0 {
					buf.WriteByte(',')
				}
				buf.Write(item)
				n++
			}
			if n > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(`{"type":"text","text":`)
			buf.Write(marshalString(markerText))
			buf.WriteString(`}]`)
			continue
		case "_meta":
			meta, err := withMember(m.value, protocol.MetaOutputCut, cut)
			if err != nil {
				return nil, err
			}
			hasMeta = true
			sep()
			buf.WriteString(`"_meta":`)
			buf.Write(meta)
			continue
		}
		sep()
		buf.Write(marshalString(m.key))
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	if !hasMeta {
		meta, err := withMember(nil, protocol.MetaOutputCut, cut)
		if err != nil {
			return nil, err
		}
		sep()
		buf.WriteString(`"_meta":`)
		buf.Write(meta)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// replaceMember is the JSON object obj with the member key set to the
// string s, in its place.
func replaceMember(obj json.RawMessage, key, s string) ([]byte, error) {
	return withMember(obj, key, s)
}

// withMember is the JSON object obj with the member key set to v: in its
// place if obj has it, else last; the other members as they are. obj nil,
// or a value other than an object, is taken as {}.
func withMember(obj json.RawMessage, key string, v any) ([]byte, error) {
	enc, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	members, err := objectMembers(obj)
	if err != nil {
		members = nil // _meta that is not an object: the sidecar's own replaces it
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	set := false
	n := 0
	for _, m := range members {
		if m.key == key && set {
			continue // a repeated key, whose last value a reader might take
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		buf.Write(marshalString(m.key))
		buf.WriteByte(':')
		if m.key == key {
			buf.Write(enc)
			set = true
			continue
		}
		buf.Write(m.value)
	}
	if !set {
		if n > 0 {
			buf.WriteByte(',')
		}
		buf.Write(marshalString(key))
		buf.WriteByte(':')
		buf.Write(enc)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// marshalString is s as a JSON string, without HTML escapes.
func marshalString(s string) []byte {
	b, _ := marshalNoEscape(s)
	return b
}

// marshalNoEscape is json.Marshal without its HTML escapes (<, >, & stay
// as they are, as the server's text has them).
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
