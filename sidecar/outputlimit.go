package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Tool output limits (docs/protocol.md, "Tool output limits"): a tool's
// result over its token limit reaches the host cut at a clean boundary,
// with a marker block saying what was left out and where the whole result
// is (a private file of the session, outputfiles.go).
//
// Most results are far under their limit and must cost nothing more than
// before: a bound on the bytes alone (outputMayExceed) lets them through
// untouched, on whatever goroutine answers the call. A larger result is
// estimated on its bytes without being decoded (outputWithin); only one
// that may really be over is decoded, counted block by block and cut.

const (
	// defaultOutputTokens is the limit when neither the configuration nor
	// the host sets one: Claude Code's (its MAX_MCP_OUTPUT_TOKENS default).
	defaultOutputTokens = 25000
	// maxImageTokens is what an image counts at most: about what a model
	// charges for an image at the largest size it takes (larger ones are
	// scaled down), and Claude Code's estimate of one.
	maxImageTokens = 1600
)

// outputLimit is the token limit of the results of tool (its raw name; ""
// when not known, as for tasks/result) on sc; 0 when results are not
// limited (the feature is off). The configuration's limit (the tool's,
// else the server's) holds, up to the host's limits.maxToolOutputTokens;
// without one, the host's, else the default.
func (sc *serverConn) outputLimit(tool string) int {
	env := sc.sess.env
	if !env.feature(FeatureToolOutputLimit) {
		return 0
	}
	limit := sc.cfg.ToolOutputTokenLimit(tool)
	if host := env.maxOutputTokens; host > 0 && (limit == 0 || limit > host) {
		limit = host
	}
	if limit == 0 {
		limit = defaultOutputTokens
	}
	return limit
}

// outputMayExceed is the check every result gets: false when raw cannot be
// over limit whatever it holds, from its length alone. The estimate of any
// part of a result is at most 1 token per byte of valid UTF-8 (a character
// of two bytes counts 2) and 2 per byte otherwise (each invalid byte
// counts as a character), so a result of at most limit/2 bytes, or of at
// most limit bytes of valid UTF-8, is within its limit.
func outputMayExceed(raw []byte, limit int) bool {
	if limit <= 0 || len(raw) <= limit/2 {
		return false
	}
	return len(raw) > limit || !utf8.Valid(raw)
}

// outputWithin reports whether raw is within limit by an estimate of its
// bytes as they are, without decoding them: what counts of a result (text
// as decoded, binary data as base64, other JSON as it is) is each a part
// of raw set off by JSON punctuation, and the estimate of a part never
// exceeds that of its bytes in raw, but for a \u escape (6 ASCII bytes)
// of a character outside ASCII, which counts up to 0.52 less than the
// character it stands for: 1 per escape, and 1 for rounding, make up for
// it.
func outputWithin(raw []byte, limit int) bool {
	return catalog.EstimateTokens(raw)+bytes.Count(raw, []byte(`\u`))+1 <= limit
}

// limitElsewhere takes over the answer to a call sent from the host's read
// loop (sendToolCall) whose result may be over its limit: counting and
// cutting it, and writing a file, is work for a goroutine of its own, not
// for the server's read loop that CallEnded runs on. It reports whether it
// did; the goroutine is the request's (counted in s.work until answered).
func (c *sentCall) limitElsewhere(raw json.RawMessage) bool {
	tc := &c.tc
	if tc.p.Task != nil || !outputMayExceed(raw, tc.sc.outputLimit(tc.bound.Name)) {
		return false
	}
	raw = bytes.Clone(raw) // the line it is a slice of is reused once CallEnded returns
	go func() {
		c.answer(c.s.limitToolOutput(tc.sc, tc.bound.Name, toolWords(tc.bound), raw), nil)
	}()
	return true
}

// limitTaskResult is limitToolOutput for the result of a task (MCP
// tasks/result, the CallToolResult of the tools/call that made it). Which
// tool made the task is not known here: the server's limit applies.
func (s *Server) limitTaskResult(sessionID, server string, raw json.RawMessage) json.RawMessage {
	// The request found the session open; it may have closed since (its
	// files are gone then, and the result goes whole).
	s.mu.Lock()
	sess := s.sessions[sessionID]
	s.mu.Unlock()
	if sess == nil {
		return raw
	}
	sc, err := sess.server(server)
	if err != nil {
		return raw
	}
	return s.limitToolOutput(sc, "", fmt.Sprintf("a task of server %q", sc.name), raw)
}

// toolWords names t for the model, by the name it knows it by.
func toolWords(t catalog.Tool) string {
	name := t.Qualified
	if name == "" {
		name = t.Name
	}
	return fmt.Sprintf("tool %q", name)
}

// limitToolOutput is the result the host gets for raw, a CallToolResult
// of tool (its raw name) on sc: raw itself when it is within the limit (or
// is not a result this can read), else raw cut to the limit, the whole
// kept in a file of the session. what names the result's maker in the
// marker.
func (s *Server) limitToolOutput(sc *serverConn, tool, what string, raw json.RawMessage) (out json.RawMessage) {
	limit := sc.outputLimit(tool)
	if !outputMayExceed(raw, limit) || outputWithin(raw, limit) {
		return raw
	}
	defer func() {
		// A fault here must not cost the host its result: it gets it
		// whole, as it would without a limit.
		if r := recover(); r != nil {
			s.logger.Error("tool result not limited: internal error", "server", sc.name, "tool", tool, "panic", r, "stack", string(debug.Stack()))
			out = raw
		}
	}()
	res, err := parseToolResult(raw)
	if err != nil {
		// Not a result this can cut (a server's malformed JSON, or no
		// content array): it goes as it came, as every result did.
		s.logger.Debug("tool result not limited", "server", sc.name, "tool", tool, "err", err)
		return raw
	}
	if res.tokens() <= limit {
		return raw
	}
	plan := res.cut(limit)
	file := res.file(raw)
	cut := protocol.OutputCut{
		Limit:                    limit,
		OriginalTokens:           res.tokens(),
		KeptTokens:               plan.kept,
		OmittedBlocks:            nonNil(plan.omitted),
		StructuredContentOmitted: plan.dropStructured,
		FileFormat:               file.format,
	}
	if plan.cutBlock >= 0 {
		cut.CutBlock = &plan.cutBlock
	}
	path, err := sc.sess.outputs.write(sc.sess.env.outputDir, file.ext, file.data)
	if err != nil {
		s.logger.Warn("tool result over its limit not kept in a file", "server", sc.name, "tool", tool, "err", err)
		cut.FileError = err.Error()
		cut.FileFormat = ""
	} else {
		cut.File = path
	}
	out, err = res.render(plan, marker(res, plan, &cut, file, what), cut)
	if err != nil {
		s.logger.Warn("tool result over its limit not cut", "server", sc.name, "tool", tool, "err", err)
		return raw
	}
	s.logger.Info("tool result cut to its limit", "server", sc.name, "tool", tool, "limit", limit, "tokens", cut.OriginalTokens, "kept", cut.KeptTokens, "file", cut.File)
	return out
}

// member is one member of a JSON object, its value as sent.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers reads the members of the JSON object raw, in order.
func objectMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

// toolResult is a CallToolResult read for counting and cutting.
type toolResult struct {
	members    []member // as sent, in order
	blocks     []block  // content
	structured json.RawMessage
	// structuredTokens is the estimate of structuredContent, as JSON.
	structuredTokens int
}

// block is one content block and what it counts.
type block struct {
	raw    json.RawMessage
	kind   string // its type
	tokens int
	// text is a text block's text; isText only for a block whose text is
	// a string (the only kind that is cut).
	text   string
	isText bool
}

// parseToolResult reads raw, a CallToolResult, and counts each part:
// a text block its text, an image its base64 data up to maxImageTokens,
// audio and an embedded resource's blob their base64 data, an embedded
// resource's text its text, any other block (a resource link, a kind a
// later MCP version adds) its JSON; structuredContent its JSON.
func parseToolResult(raw []byte) (*toolResult, error) {
	members, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	res := &toolResult{members: members}
	hasContent := false
	for _, m := range members {
		switch m.key {
		case "content":
			var blocks []json.RawMessage
			if err := json.Unmarshal(m.value, &blocks); err != nil {
				return nil, fmt.Errorf("content: %w", err)
			}
			hasContent = true
			for _, b := range blocks {
				res.blocks = append(res.blocks, countBlock(b))
			}
		case "structuredContent":
			if string(m.value) != "null" {
				res.structured = m.value
				res.structuredTokens = catalog.EstimateTokens(m.value)
			}
		}
	}
	if !hasContent {
		return nil, errors.New("no content array")
	}
	return res, nil
}

// countBlock reads one content block and counts it.
func countBlock(raw json.RawMessage) block {
	var v struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text"`
		Data     json.RawMessage `json:"data"`
		Resource *struct {
			Text *string         `json:"text"`
			Blob json.RawMessage `json:"blob"`
		} `json:"resource"`
	}
	b := block{raw: raw}
	if json.Unmarshal(raw, &v) != nil {
		b.tokens = catalog.EstimateTokens(raw)
		return b
	}
	b.kind = v.Type
	switch {
	case v.Type == "text" && v.Text != nil:
		b.text, b.isText = *v.Text, true
		b.tokens = catalog.EstimateTokens([]byte(b.text))
	case v.Type == "image" && isJSONString(v.Data):
		b.tokens = min(catalog.EstimateTokens(v.Data[1:len(v.Data)-1]), maxImageTokens)
	case v.Type == "audio" && isJSONString(v.Data):
		b.tokens = catalog.EstimateTokens(v.Data[1 : len(v.Data)-1])
	case v.Type == "resource" && v.Resource != nil && v.Resource.Text != nil:
		b.tokens = catalog.EstimateTokens([]byte(*v.Resource.Text))
	case v.Type == "resource" && v.Resource != nil && isJSONString(v.Resource.Blob):
		b.tokens = catalog.EstimateTokens(v.Resource.Blob[1 : len(v.Resource.Blob)-1])
	default:
		b.tokens = catalog.EstimateTokens(raw)
	}
	return b
}

func isJSONString(raw json.RawMessage) bool {
	return len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"'
}

// tokens is the estimate of the whole result.
func (r *toolResult) tokens() int {
	n := r.structuredTokens
	for _, b := range r.blocks {
		n += b.tokens
	}
	return n
}

// cutPlan is what of a result is kept.
type cutPlan struct {
	keep           []bool // by block: kept whole
	cutBlock       int    // the text block kept in part, or -1
	cutText        string // what is kept of it
	omitted        []int  // blocks left out whole
	dropStructured bool
	kept           int // tokens kept
}

// cut decides what of r is kept within limit. Whole blocks come first: in
// order, every block that still fits is kept; then structuredContent if
// it fits in what is left (it is machine-read and cannot be cut and stay
// valid); then the first text block left out is cut to what is left, at
// the last line break within it, or at a character boundary where a line
// break would keep less than half of what fits. Binary data is never cut:
// a block of it is kept or left out whole.
func (r *toolResult) cut(limit int) cutPlan {
	p := cutPlan{keep: make([]bool, len(r.blocks)), cutBlock: -1}
	left := limit
	for i, b := range r.blocks {
		if b.tokens <= left {
			p.keep[i] = true
			left -= b.tokens
		}
	}
	if r.structured != nil {
		if r.structuredTokens <= left {
			left -= r.structuredTokens
		} else {
			p.dropStructured = true
		}
	}
	for i, b := range r.blocks {
		if p.keep[i] || !b.isText {
			continue
		}
		if n := textPrefix(b.text, left); n > 0 {
			p.cutBlock, p.cutText = i, b.text[:n]
			left -= catalog.EstimateTokens([]byte(p.cutText))
		}
		break
	}
	for i := range r.blocks {
		if !p.keep[i] && i != p.cutBlock {
			p.omitted = append(p.omitted, i)
		}
	}
	p.kept = limit - left
	return p
}

// textPrefix is the length of the part of text kept within budget tokens:
// the longest prefix, ending at a character boundary, whose estimate is
// within budget, shortened to its last line break unless that would keep
// less than half of it.
func textPrefix(text string, budget int) int {
	if budget <= 0 {
		return 0
	}
	w := catalog.EstimateWeights()
	// The text is counted a chunk at a time, each ending after a character
	// that ends a word (white space, punctuation, a character outside
	// ASCII): counts of such chunks add up to the count of the whole. The
	// chunk that goes past the budget is searched for the last character
	// boundary within it (the estimate grows with every character).
	var done catalog.TokenFeatures // of text[:start]
	start, end := 0, len(text)
	for start < len(text) {
		next := chunkEnd(text, start+outputChunk)
		f := addFeatures(done, catalog.CountTokenFeatures([]byte(text[start:next])))
		if w.Estimate(f) > budget {
			end = next
			break
		}
		done, start = f, next
	}
	if start < end {
		chunk := text[start:end]
		n := sort.Search(len(chunk)+1, func(n int) bool {
			return w.Estimate(addFeatures(done, catalog.CountTokenFeatures([]byte(chunk[:runeStart(chunk, n)])))) > budget
		})
		start += runeStart(chunk, max(n-1, 0))
	}
	if nl := strings.LastIndexByte(text[:start], '\n'); nl >= 0 && nl+1 >= start/2 {
		return nl + 1
	}
	return start
}

// outputChunk is about how much of a text textPrefix counts at a time.
const outputChunk = 4096

// chunkEnd is the first index at or after i (or the end of s) that
// follows a character ending a word and starts a character.
func chunkEnd(s string, i int) int {
	for ; i < len(s); i++ {
		c := s[i-1]
		word := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !word && utf8.RuneStart(s[i]) {
			return i
		}
	}
	return len(s)
}

// addFeatures is the count of two texts one after the other, the first
// ending after a character that ends a word.
func addFeatures(a, b catalog.TokenFeatures) catalog.TokenFeatures {
	return catalog.TokenFeatures{ASCII: a.ASCII + b.ASCII, Words: a.Words + b.Words, Punct: a.Punct + b.Punct, Other: a.Other + b.Other}
}

// runeStart moves i back to the start of the character it is in.
func runeStart(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

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
