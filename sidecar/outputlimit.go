package sidecar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime/debug"
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
		// raw and its copies are dropped: their memory can go back.
		c.s.mem.Note(len(raw))
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
	// A result this large that does not reach the host whole leaves no
	// large host frame behind it: the copies made here (the result read,
	// its text, the file's content) must be released all the same, once
	// they are dropped.
	defer s.mem.Note(len(raw))
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
