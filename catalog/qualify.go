package catalog

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// Qualified-name lengths.
const (
	// DefaultMaxNameLen is the default cap on a qualified name, in bytes
	// (the tool-name limit of the common model APIs).
	DefaultMaxNameLen = 64
	// MinMaxNameLen is the smallest cap Qualify honours; smaller caps are
	// raised to it. It leaves room for the 13-byte hash suffix and a
	// disambiguating counter of up to 18 digits, which is what makes
	// Qualify's uniqueness guarantee hold for any input.
	MinMaxNameLen = 32
)

const (
	hashHexLen = 12
	// suffixLen is len("_" + 12 hex digits).
	suffixLen = 1 + hashHexLen
)

// Qualify assigns Qualified to every tool of a session catalog (all servers
// together).
//
// A tool's readable name is "mcp__" + server + "__" + tool with every
// character outside [A-Za-z0-9_-] replaced by "_". It is used as is when it
// fits in maxLen bytes (<= 0 means DefaultMaxNameLen; values below
// MinMaxNameLen are raised to it) and no other tool has the same readable
// name. Otherwise the tool is named by its readable name, truncated so the
// whole fits, + "_" + the first 12 hex digits of SHA-1(server + "\x00" +
// tool), its raw identity.
//
// A hashed name can still meet a name already given out (a tool literally
// named like another's hashed name, or a 48-bit hash prefix collision, which
// a hostile server can manufacture). Such a tool gets "_2", "_3", ... after
// the hash, with the readable part shortened to keep the length.
//
// Why the result never holds a duplicate: readable names used as is are
// unique by construction (only names held by exactly one tool are kept), and
// every other name is checked against the set of names already assigned
// before it is taken. Why this terminates: for one tool the candidates with
// counters n = 2, 3, ... are pairwise distinct, because each ends in "_" +
// the decimal digits of n and "_" is not a digit, so the trailing digit run
// of a candidate is exactly n; at most len(tools) names are taken, so one of
// the first len(tools)+1 candidates is free. Why it is deterministic: the
// kept readable names depend only on the multiset of identities, and hashed
// names are given out in the order of (server, tool, Raw), not input order.
//
// The candidate length always fits: a counter n <= len(tools)+1 < 10^18 has
// at most 18 digits, and 13 + 1 + 18 = 32 = MinMaxNameLen.
func Qualify(tools []Tool, maxLen int) {
	if maxLen <= 0 {
		maxLen = DefaultMaxNameLen
	}
	maxLen = max(maxLen, MinMaxNameLen)

	readable := make([]string, len(tools))
	count := make(map[string]int, len(tools))
	for i := range tools {
		readable[i] = readableName(tools[i].Server, tools[i].Name)
		count[readable[i]]++
	}

	used := make(map[string]bool, len(tools))
	var hashed []int
	for i := range tools {
		r := readable[i]
		if len(r) <= maxLen && count[r] == 1 {
			tools[i].Qualified = r
			used[r] = true
		} else {
			hashed = append(hashed, i)
		}
	}
	if len(hashed) == 0 {
		return
	}

	slices.SortFunc(hashed, func(a, b int) int {
		ta, tb := &tools[a], &tools[b]
		return cmp.Or(
			strings.Compare(ta.Server, tb.Server),
			strings.Compare(ta.Name, tb.Name),
			strings.Compare(string(ta.Raw), string(tb.Raw)),
		)
	})
	for _, i := range hashed {
		h := identityHash(tools[i].Server, tools[i].Name)
		name := hashedName(readable[i], h, "", maxLen)
		for n := 2; used[name]; n++ {
			name = hashedName(readable[i], h, "_"+strconv.Itoa(n), maxLen)
		}
		tools[i].Qualified = name
		used[name] = true
	}
}

// readableName is "mcp__<server>__<tool>" sanitised to [A-Za-z0-9_-]. Every
// character (not byte) outside the set becomes one "_"; each byte of invalid
// UTF-8 counts as one character.
func readableName(server, tool string) string {
	var b strings.Builder
	b.Grow(len("mcp__") + len(server) + len("__") + len(tool))
	b.WriteString("mcp__")
	sanitize(&b, server)
	b.WriteString("__")
	sanitize(&b, tool)
	return b.String()
}

func sanitize(b *strings.Builder, s string) {
	for _, r := range s {
		if r < 0x80 && nameByte(byte(r)) {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
	}
}

// nameByte reports whether c is in [A-Za-z0-9_-].
func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// identityHash is the first 12 hex digits of SHA-1 of the raw identity.
func identityHash(server, tool string) string {
	sum := sha1.Sum([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:hashHexLen]
}

// hashedName is readable, truncated to fit, + "_" + hash + counter. The
// readable part is ASCII, so truncating bytes never splits a character.
func hashedName(readable, hash, counter string, maxLen int) string {
	keep := maxLen - suffixLen - len(counter)
	if len(readable) > keep {
		readable = readable[:keep]
	}
	return readable + "_" + hash + counter
}
