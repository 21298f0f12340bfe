package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
)

// member is one member of a JSON object, its value as sent.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers reads the members of the JSON object raw, in order, each
// value a slice of raw. A result cut to its limit is large (tens of MB):
// encoding/json would copy it into its decoder's buffer, growing, and copy
// every value out again, several times the result in memory at once.
func objectMembers(raw []byte) ([]member, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	var out []member
	err := eachElement(raw, '{', func(key, value []byte) error {
		var k string
		if err := json.Unmarshal(key, &k); err != nil {
			return err
		}
		out = append(out, member{k, value})
		return nil
	})
	return out, err
}

// arrayElements reads the elements of the JSON array raw, each a slice
// of raw; raw is valid JSON (a member objectMembers read). null is no
// elements, as json.Unmarshal reads it.
func arrayElements(raw []byte) ([]json.RawMessage, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	var out []json.RawMessage
	err := eachElement(raw, '[', func(_, value []byte) error {
		out = append(out, value)
		return nil
	})
	return out, err
}

// eachElement calls f with each member (key and value) of the object or
// each element (value) of the array raw, which is valid JSON; open is
// '{' or '['. Values are found by their extent, not decoded.
func eachElement(raw []byte, open byte, f func(key, value []byte) error) error {
	i := skipSpaces(raw, 0)
	if i >= len(raw) || raw[i] != open {
		if open == '{' {
			return errors.New("not a JSON object")
		}
		return errors.New("not a JSON array")
	}
	for i = skipSpaces(raw, i+1); i < len(raw) && raw[i] != '}' && raw[i] != ']'; i = skipSpaces(raw, i) {
		var key []byte
		if open == '{' {
			end := jsonValueEnd(raw, i)
			key = raw[i:end]
			i = skipSpaces(raw, end) + 1 // past the colon
			i = skipSpaces(raw, i)
		}
		end := jsonValueEnd(raw, i)
		if err := f(key, raw[i:end]); err != nil {
			return err
		}
		if i = skipSpaces(raw, end); i < len(raw) && raw[i] == ',' {
			i++
		}
	}
	return nil
}

func skipSpaces(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// jsonValueEnd is the index just past the valid JSON value at b[i].
// Strings are crossed from quote to quote, as a result's strings are
// most of its bytes.
func jsonValueEnd(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = jsonStringEnd(b, i)
			if depth == 0 {
				return i
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return i // the end of a number or a literal
		}
		i++
	}
	return i
}

// jsonStringEnd is the index just past the string at b[i] (a quote).
func jsonStringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		q := j + k
		n := 0 // backslashes before the quote: an odd run escapes it
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
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
			blocks, err := arrayElements(m.value)
			if err != nil {
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
