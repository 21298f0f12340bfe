package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// scopeVersion names the fingerprint format: changing what goes into a
// fingerprint must change it, so old keys can never match new ones.
const scopeVersion = "mcp-sidecar/discovery-scope/v1"

// ScopeKey is the discovery scope of a server in a session
// (docs/protocol.md, "Sessions, startup and the discovery scope"): a hex
// SHA-256 over the server name, a fingerprint of its effective
// configuration, the session's scope and, for a stdio server without cwd,
// the session's fallback cwd.
//
// The configuration fingerprint covers: the transport; command, args and
// cwd (stdio) or url (HTTP); env names with hashes of their values; env_vars
// names with hashes of the values env gives them (a different value can mean
// a different account, hence a different catalog); http_headers names with
// value hashes; env_http_headers header and variable names with hashes of
// the variables' values; bearer_token_env_var with a hash of the token; a
// hash of the header helper's command (http_headers_helper); for a
// definition whose VS Code inputs were given (config.ServerConfig.WithInputs),
// the definition as written with a digest of each input's value; and
// protocol_version (the protocol can change what a server lists). Filters,
// timeouts and the other keys that do not change what the server lists are
// left out, so sessions that only filter differently still share a listing.
// The fallback cwd is left out for HTTP servers and stdio servers with a cwd:
// it does not reach them.
//
// sessionScope is compared as JSON: members in another order and other
// whitespace give the same key; an empty sessionScope is the same as null.
// Anything that is not one valid UTF-8 JSON value is compared as bytes.
//
// Equal inputs give equal keys and a difference in any covered input gives a
// different key: every field is written length-prefixed, so no two inputs
// encode alike. Secret values only enter as SHA-256 digests inside the final
// digest: the key reveals nothing about them. A nil env finds no variable.
func ScopeKey(server string, cfg *config.ServerConfig, env config.Lookup, sessionScope json.RawMessage, fallbackCwd string) string {
	lookup := func(name string) string {
		if env == nil {
			return digestOf("", false)
		}
		v, ok := env(name)
		return digestOf(v, ok)
	}

	w := fingerprint{h: sha256.New()}
	w.field("v", scopeVersion)
	w.field("server", server)
	var inputs map[string]string
	if cfg != nil && cfg.Template != nil {
		// A definition with its VS Code inputs given: the definition as
		// written, and a digest of each value, never the value.
		cfg, inputs = cfg.Template, cfg.InputDigests
	}
	if cfg == nil {
		w.field("config", "none")
	} else {
		transport := cfg.Transport()
		w.field("transport", transport)
		w.field("command", cfg.Command)
		w.list("args", cfg.Args)
		w.field("cwd", cfg.Cwd)
		w.field("url", cfg.URL)
		if cfg.SSE {
			// Another transport at the same URL may be another server.
			w.field("sse")
		}
		w.field("protocol_version", cfg.ProtocolVersion)
		for _, k := range sortedKeys(cfg.Env) {
			w.field("env", k, digestOf(cfg.Env[k], true))
		}
		for _, k := range slices.Sorted(slices.Values(cfg.EnvVars)) {
			w.field("env_vars", k, lookup(k))
		}
		for _, k := range sortedKeys(cfg.HTTPHeaders) {
			w.field("http_headers", k, digestOf(cfg.HTTPHeaders[k], true))
		}
		for _, k := range sortedKeys(cfg.EnvHTTPHeaders) {
			v := cfg.EnvHTTPHeaders[k]
			w.field("env_http_headers", k, v, lookup(v))
		}
		if cfg.BearerTokenEnvVar != "" {
			w.field("bearer_token_env_var", cfg.BearerTokenEnvVar, lookup(cfg.BearerTokenEnvVar))
		}
		// A header helper's command, not its output: the token it prints
		// changes with every run, the account behind it with the command.
		if cfg.HTTPHeadersHelper != "" {
			w.field("http_headers_helper", digestOf(cfg.HTTPHeadersHelper, true))
		}
		if transport == config.TransportStdio && cfg.Cwd == "" {
			w.field("fallback_cwd", fallbackCwd)
		}
		for _, id := range sortedKeys(inputs) {
			w.field("input", id, inputs[id])
		}
	}
	w.field("scope", canonicalScope(sessionScope))
	return hex.EncodeToString(w.h.Sum(nil))
}

// fingerprint writes tagged, length-prefixed fields into a hash, so that
// the byte stream, and thus the digest input, differs whenever any field does.
type fingerprint struct{ h hash.Hash }

func (w fingerprint) str(s string) {
	var n [binary.MaxVarintLen64]byte
	w.h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	io.WriteString(w.h, s)
}

func (w fingerprint) field(tag string, values ...string) {
	w.str(tag)
	w.count(len(values))
	for _, v := range values {
		w.str(v)
	}
}

func (w fingerprint) list(tag string, values []string) { w.field(tag, values...) }

func (w fingerprint) count(n int) {
	var b [binary.MaxVarintLen64]byte
	w.h.Write(b[:binary.PutUvarint(b[:], uint64(n))])
}

// digestOf is "unset" for a missing variable, else the hex SHA-256 of its
// value: an unset variable and an empty value differ.
func digestOf(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	sum := sha256.Sum256([]byte(v))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// canonicalScope re-encodes a JSON value with object members sorted by key
// and no insignificant whitespace. Numbers keep their text (json.Number),
// so 1 and 1.0 stay different: that can only split a scope, never merge two.
// Input that is not a single valid UTF-8 JSON value is kept as its bytes
// under a tag no JSON encoding starts with. (Invalid UTF-8 is excluded
// because decoding would turn different bad bytes into the same U+FFFD.)
func canonicalScope(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "json:null"
	}
	if utf8.Valid(raw) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if _, err := dec.Token(); err == io.EOF {
				if b, err := json.Marshal(v); err == nil {
					return "json:" + string(b)
				}
			}
		}
	}
	return "bytes:" + string(raw)
}
