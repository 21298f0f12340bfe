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

// Qualify assigns Qualified to every tool of a catalog (all servers
// together), as a session that never named a tool before would: see
// Names.Qualify.
func Qualify(tools []Tool, maxLen int) {
	(&Names{MaxLen: maxLen}).Qualify(tools)
}

// MaxRetiredNames bounds the names Names remembers of tools that left the
// catalog: a server that churns out new tool names cannot grow a session's
// memory without end. Past it, the oldest retired names are forgotten (and
// may then be given to another tool).
const MaxRetiredNames = 4096

// Names gives the tools of a session catalog their qualified names and
// remembers them, so that a name means one tool for the life of the
// session: a tool keeps its name for as long as it is in the catalog (and
// gets it back when it returns), and a name once given to a tool is never
// given to another (up to MaxRetiredNames names of tools that left). A
// host that holds a name therefore reaches that tool or none. The zero
// value has no history; a Names is not safe for concurrent use.
type Names struct {
	// MaxLen caps a name, in bytes (<= 0 means DefaultMaxNameLen; values
	// below MinMaxNameLen are raised to it).
	MaxLen int

	given   map[string]string   // name -> the identity it was given to
	names   map[string][]string // identity -> the names given to it, first first
	current map[string]bool     // the names of the last catalog
	retired []string            // names that left the catalog, oldest first (may repeat, or be current again)
}

// Qualify assigns Qualified to every tool of a session catalog (all servers
// together).
//
// A tool already named by this Names keeps its name. A tool's readable name
// is "mcp__" + server + "__" + tool with every character outside
// [A-Za-z0-9_-] replaced by "_". A new tool gets it when it fits in MaxLen
// bytes, no other new tool has the same readable name, it was never given
// to another tool, and the server's name is plain: only [A-Za-z0-9_-],
// with no "__" and no "_" at its end. (The readable names of plain
// servers cannot meet across servers, since one would need the other's
// name followed by "_": "mcp__a__b__c" would be server "a"'s tool "b__c"
// and server "a__b"'s tool "c".) Otherwise the tool is named by its
// readable name, truncated so the whole fits, + "_" + the first 12 hex
// digits of SHA-1(server + "\x00" + tool), its raw identity.
//
// A hashed name can still meet a name already given out (a tool literally
// named like another's hashed name, or a 48-bit hash prefix collision, which
// a hostile server can manufacture). Such a tool gets "_2", "_3", ... after
// the hash, with the readable part shortened to keep the length.
//
// Why the result never holds a duplicate: every name is checked against
// the names already assigned in this call (kept names are distinct, since
// each was given to one tool), and readable names of new tools are only
// used when exactly one new tool has them. Why this terminates: for one
// tool the candidates with counters n = 2, 3, ... are pairwise distinct,
// because each ends in "_" + the decimal digits of n and "_" is not a
// digit, so the trailing digit run of a candidate is exactly n; finitely
// many names are taken, so one candidate is free. Why the first call is
// deterministic: the readable names kept depend only on the multiset of
// identities, and hashed names are given out in the order of (server, tool,
// Raw), not input order; later calls depend on the names given before.
//
// The candidate length always fits: a counter is at most the number of
// names taken + 1 (the catalog's and the retired ones), far below 10^18,
// so it has at most 18 digits, and 13 + 1 + 18 = 32 = MinMaxNameLen.
func (n *Names) Qualify(tools []Tool) {
	maxLen := n.MaxLen
	if maxLen <= 0 {
		maxLen = DefaultMaxNameLen
	}
	maxLen = max(maxLen, MinMaxNameLen)
	if n.given == nil {
		n.given, n.names = map[string]string{}, map[string][]string{}
	}

	used := make(map[string]bool, len(tools))
	// taken reports whether name may not go to the tool of identity id.
	taken := func(name, id string) bool {
		holder, given := n.given[name]
		return used[name] || given && holder != id
	}
	var fresh []int
	for i := range tools {
		id := identityOf(tools[i])
		kept := false
		for _, name := range n.names[id] {
			if !used[name] {
				tools[i].Qualified, used[name], kept = name, true, true
				break
			}
		}
		if !kept {
			fresh = append(fresh, i)
		}
	}

	readable := make([]string, len(tools)) // of the fresh tools that may have theirs
	count := make(map[string]int, len(fresh))
	for _, i := range fresh {
		if r := readableName(tools[i].Server, tools[i].Name); plainServer(tools[i].Server) && len(r) <= maxLen {
			readable[i] = r
			count[r]++
		}
	}
	var hashed []int
	for _, i := range fresh {
		r := readable[i]
		if r != "" && count[r] == 1 && !taken(r, identityOf(tools[i])) {
			tools[i].Qualified = r
			used[r] = true
		} else {
			hashed = append(hashed, i)
		}
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
		id := identityOf(tools[i])
		r := readableName(tools[i].Server, tools[i].Name)
		h := identityHash(tools[i].Server, tools[i].Name)
		name := hashedName(r, h, "", maxLen)
		for k := 2; taken(name, id); k++ {
			name = hashedName(r, h, "_"+strconv.Itoa(k), maxLen)
		}
		tools[i].Qualified = name
		used[name] = true
	}
	n.remember(tools)
}

// Holder returns the server and raw tool name a qualified name was given
// to, whether or not that tool is in the catalog now.
func (n *Names) Holder(name string) (server, tool string, ok bool) {
	id, ok := n.given[name]
	if !ok {
		return "", "", false
	}
	server, tool, _ = strings.Cut(id, "\x00")
	return server, tool, true
}

// remember records the names of a catalog, retires the names of tools that
// left it, and forgets the oldest retired names past MaxRetiredNames.
func (n *Names) remember(tools []Tool) {
	now := make(map[string]bool, len(tools))
	for _, t := range tools {
		now[t.Qualified] = true
		if _, ok := n.given[t.Qualified]; !ok {
			id := identityOf(t)
			n.given[t.Qualified] = id
			n.names[id] = append(n.names[id], t.Qualified)
		}
	}
	for name := range n.current {
		if !now[name] {
			n.retired = append(n.retired, name)
		}
	}
	n.current = now
	for len(n.given)-len(n.current) > MaxRetiredNames && len(n.retired) > 0 {
		name := n.retired[0]
		n.retired = n.retired[1:]
		if id, ok := n.given[name]; ok && !n.current[name] {
			delete(n.given, name)
			n.names[id] = slices.DeleteFunc(n.names[id], func(s string) bool { return s == name })
			if len(n.names[id]) == 0 {
				delete(n.names, id)
			}
		}
	}
	if len(n.retired) > 2*MaxRetiredNames {
		// Names that came back, or left twice, are in the queue again:
		// keep each retired name once, oldest first.
		seen := make(map[string]bool, len(n.retired))
		n.retired = slices.DeleteFunc(n.retired, func(name string) bool {
			_, given := n.given[name]
			drop := seen[name] || !given || n.current[name]
			seen[name] = true
			return drop
		})
	}
}

func identityOf(t Tool) string { return t.Server + "\x00" + t.Name }

// plainServer reports whether a server's name is of [A-Za-z0-9_-], with no
// "__" and no "_" at its end: then no other plain server's readable names
// can be equal to its own.
func plainServer(server string) bool {
	if server == "" || strings.Contains(server, "__") || strings.HasSuffix(server, "_") {
		return false
	}
	for i := 0; i < len(server); i++ {
		if !nameByte(server[i]) {
			return false
		}
	}
	return true
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
