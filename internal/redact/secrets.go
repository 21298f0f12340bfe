package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// MinSecretLen is the length under which a configured value is not taken
// for a secret: replacing "1", "true" or "prod" wherever a server writes
// them would blank out its words, and no credential is that short.
const MinSecretLen = 8

// Secrets replaces known secret values in text a server wrote: an error
// message that quotes the request it refused, a stderr line that prints
// the server's environment. Each value is replaced as it is and as it
// appears escaped in a URL or a JSON string. The zero value and nil
// replace nothing.
type Secrets struct {
	static []string
	// dynamic supplies secrets that change over time (OAuth tokens); it
	// is asked at each replacement.
	dynamic func() []string

	mu    sync.Mutex
	key   string // the dynamic values the replacer was built with
	built bool
	cur   replacement
}

// replacement is what Secrets replaces, built from its values.
type replacement struct {
	replace *strings.Replacer // nil: nothing to replace
	values  []string          // static and dynamic values, as given
	forms   []string          // every form of every value, longest first
}

// longest is the length of the longest form (0 when there is none).
func (r replacement) longest() int {
	if len(r.forms) == 0 {
		return 0
	}
	return len(r.forms[0])
}

// NewSecrets returns the Secrets of values and of what dynamic returns
// each time, if it is not nil. Values shorter than MinSecretLen are
// ignored, unless they look like a key by themselves (PathSegmentSecret).
func NewSecrets(values []string, dynamic func() []string) *Secrets {
	return &Secrets{static: keep(values), dynamic: dynamic}
}

// keep is values without repeats and without those too short to be
// secrets, unless their look says they are (a key prefix: "sk-abc").
func keep(values []string) []string {
	var out []string
	for _, v := range values {
		if (len(v) >= MinSecretLen || PathSegmentSecret(v)) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// current is the replacement of the current values.
func (s *Secrets) current() replacement {
	var dyn []string
	if s.dynamic != nil {
		dyn = keep(s.dynamic())
	}
	key := strings.Join(dyn, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built && key == s.key {
		return s.cur
	}
	values := slices.Concat(s.static, dyn)
	var forms []string
	for _, v := range values {
		for _, f := range encodings(v) {
			if f != "" && !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	// Longest first: the replacer tries its strings in order, and a
	// secret inside another (a password inside its Basic header) must not
	// break the other's replacement.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Placeholder)
	}
	s.cur, s.key, s.built = replacement{values: values, forms: forms}, key, true
	if len(pairs) > 0 {
		s.cur.replace = strings.NewReplacer(pairs...)
	}
	return s.cur
}

// replacer is the replacer of the current values, and the values.
func (s *Secrets) replacer() (*strings.Replacer, []string) {
	r := s.current()
	return r.replace, r.values
}

// encodings are the forms v takes in text: as it is, escaped in a URL's
// query or path, escaped in a JSON string (with and without HTML
// escaping), and in base64 (standard and URL alphabets, with and without
// padding: what a Basic header, a JWT or a data dump shows), whole and
// inside the base64 of a longer text ("user:" + v in a Basic header,
// base64Inner).
func encodings(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(v)
	forms = append(forms, jsonBody(b.Bytes()))
	b.Reset()
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	forms = append(forms, jsonBody(b.Bytes()))
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		padded := e.EncodeToString([]byte(v))
		forms = append(forms, padded, strings.TrimRight(padded, "="))
		forms = append(forms, base64Inner(e, v)...)
	}
	return forms
}

// minInnerForm is the shortest base64Inner form kept: shorter runs of
// base64 would match text by chance.
const minInnerForm = 8

// base64Inner are the characters v always becomes in the base64 (alphabet
// e) of any text it is part of, for each of the three offsets it may have
// from the start of a 3-byte group: the characters of the groups made of
// v's bytes only. The bytes before and after v change the characters of
// the groups they share with v (at most three characters on each side,
// which are left as they are).
func base64Inner(e *base64.Encoding, v string) []string {
	var forms []string
	for k := range 3 {
		n := (k + len(v)) / 3 * 3 // the bytes of whole groups
		if n <= k {
			continue
		}
		text := make([]byte, n)
		copy(text[k:], v) // k bytes before v: zero, their characters dropped
		enc := e.EncodeToString(text)
		if k > 0 {
			enc = enc[4:]
		}
		if len(enc) >= minInnerForm {
			forms = append(forms, enc)
		}
	}
	return forms
}

// jsonBody is an encoded JSON string without its quotes and newline.
func jsonBody(enc []byte) string {
	return string(bytes.TrimSuffix(bytes.TrimSpace(enc), []byte(`"`))[1:])
}

// String is text with every secret replaced by Placeholder.
func (s *Secrets) String(text string) string {
	if s == nil || text == "" {
		return text
	}
	r, _ := s.replacer()
	if r == nil {
		return text
	}
	return r.Replace(text)
}

// JSON is raw JSON with every secret in it replaced by Placeholder, and
// still valid JSON: a secret written with escapes the replacement does not
// know (\u0041, \/), or outside a string (a number), is found by decoding
// raw, and then the value is encoded again (keys sorted). Text that is not
// JSON comes back as a JSON string of its scrubbed text.
func (s *Secrets) JSON(raw json.RawMessage) json.RawMessage {
	if s == nil || len(raw) == 0 {
		return raw
	}
	r, values := s.replacer()
	if r == nil {
		return raw
	}
	out := json.RawMessage(r.Replace(string(raw)))
	escaped := bytes.Contains(out, []byte(`\u`)) || bytes.Contains(out, []byte(`\/`))
	if !escaped && (bytes.Equal(out, raw) || json.Valid(out)) {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		b, _ := json.Marshal(s.String(string(raw)))
		return b
	}
	v, changed := scrubValue(v, r, values)
	if !changed && json.Valid(out) {
		return out // the escapes hid nothing: the bytes as they were
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b, _ := json.Marshal(s.String(string(raw)))
		return b
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// scrubValue replaces the secrets in the strings, keys and numbers of a
// decoded JSON value, and reports whether it replaced any.
func scrubValue(v any, r *strings.Replacer, values []string) (any, bool) {
	switch v := v.(type) {
	case string:
		out := r.Replace(v)
		return out, out != v
	case json.Number:
		if s := string(v); slices.ContainsFunc(values, func(x string) bool { return strings.Contains(s, x) }) {
			return r.Replace(s), true
		}
		return v, false
	case []any:
		changed := false
		for i := range v {
			var c bool
			v[i], c = scrubValue(v[i], r, values)
			changed = changed || c
		}
		return v, changed
	case map[string]any:
		out := make(map[string]any, len(v))
		changed := false
		for k, x := range v {
			sk := r.Replace(k)
			sx, c := scrubValue(x, r, values)
			out[sk] = sx
			changed = changed || c || sk != k
		}
		return out, changed
	}
	return v, false
}

// ServerValues are the secrets a server's configuration gives it, read
// from env where the configuration names a variable: the bearer token
// (bearer_token_env_var), every http_headers and env_http_headers value,
// the URL's userinfo (as it is and as the Basic header it becomes), its
// query values and the path segments that look like secrets
// (PathSegmentSecret), the OAuth client secret (oauth.client_secret_env_var),
// what ${VAR} references put into the definition (ServerConfig.Expanded:
// in its URL's path too), and for a stdio server every value of env and
// of the variables env_vars passes on and the values of its secret-looking
// flags (FlagValues). Which of these are secret the
// configuration does not say; all are taken, and NewSecrets ignores those
// too short to be secrets. The values of the allowlisted variables every
// child inherits (HOME, PATH, USER, ...) are not: they are not secrets,
// and replacing them would blank out paths in every message.
func ServerValues(cfg *config.ServerConfig, env config.Lookup) []string {
	var vals []string
	lookup := func(name string) {
		if env == nil || name == "" {
			return
		}
		if v, ok := env(name); ok {
			vals = append(vals, v)
		}
	}
	lookup(cfg.BearerTokenEnvVar)
	for _, v := range cfg.HTTPHeaders {
		vals = append(vals, headerValues(v)...)
	}
	for _, name := range cfg.EnvHTTPHeaders {
		if env != nil && name != "" {
			if v, ok := env(name); ok {
				vals = append(vals, headerValues(v)...)
			}
		}
	}
	if cfg.OAuth != nil {
		lookup(cfg.OAuth.ClientSecretEnvVar)
	}
	for _, v := range cfg.Env {
		vals = append(vals, v)
	}
	for _, name := range cfg.EnvVars {
		lookup(name)
	}
	if cfg.URL != "" {
		vals = append(vals, URLValues(cfg.URL)...)
	}
	vals = append(vals, cfg.Expanded...)
	return append(vals, FlagValues(cfg.Args)...)
}

// headerValues are the secrets of a header value: the value, and for
// "Bearer TOKEN" or "Basic CREDENTIALS" the credential alone (a server may
// quote it without its scheme); for Basic also the "user:password" it
// encodes and the password.
func headerValues(v string) []string {
	vals := []string{v}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		return vals
	}
	cred = strings.TrimSpace(cred)
	vals = append(vals, cred)
	if strings.EqualFold(scheme, "Basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
			_, pass, _ := strings.Cut(string(dec), ":")
			vals = append(vals, string(dec), pass)
		}
	}
	return vals
}

// secretFlagWords are the words of a command-line flag's name that say
// its value is a secret (--api-key, --token, --db-password, --client_secret).
var secretFlagWords = []string{"key", "apikey", "token", "password", "passwd", "pass", "pwd", "secret", "credential", "credentials", "auth", "pat"}

// FlagValues are the values of the secret-looking flags of a command line
// (args): the argument after --api-key, --token, --password, --secret and
// their kind (secretFlagWords, - or -- and any case), and the value of
// their --flag=value form. A server that fails to start may print its
// command line; its error messages may quote the key it was given.
func FlagValues(args []string) []string {
	var vals []string
	for i, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !secretFlag(name) {
			continue
		}
		switch {
		case hasValue:
			vals = append(vals, v)
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			vals = append(vals, args[i+1])
		}
	}
	return vals
}

// secretFlag reports whether a flag's name (without its dashes) has one
// of secretFlagWords among its words (split at -, _ and case changes).
func secretFlag(name string) bool {
	var words []string
	start := 0
	for i := 1; i <= len(name); i++ {
		if i == len(name) || name[i] == '-' || name[i] == '_' || name[i] == '.' ||
			('A' <= name[i] && name[i] <= 'Z' && 'a' <= name[i-1] && name[i-1] <= 'z') {
			if w := strings.Trim(name[start:i], "-_."); w != "" {
				words = append(words, strings.ToLower(w))
			}
			start = i
		}
	}
	return slices.ContainsFunc(words, func(w string) bool { return slices.Contains(secretFlagWords, w) })
}

// URLValues are the secrets of a URL, for Secrets: its userinfo (and the
// Basic credentials it becomes), its query values (and bare query parts)
// and its secret-looking path segments, as they are and unescaped. Text
// that quotes the URL in pieces (a metadata URL built from its path) is
// scrubbed by them where replacing the URL whole would miss.
func URLValues(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var vals []string
	if u.User != nil {
		name := u.User.Username()
		pass, _ := u.User.Password()
		vals = append(vals, u.User.String(), name, pass,
			base64.StdEncoding.EncodeToString([]byte(name+":"+pass)))
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		_, v, hasValue := strings.Cut(part, "=")
		if !hasValue {
			v = part
		}
		vals = append(vals, v)
		if uv, err := url.QueryUnescape(v); err == nil {
			vals = append(vals, uv)
		}
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if PathSegmentSecret(seg) {
			vals = append(vals, seg)
			if uv, err := url.PathUnescape(seg); err == nil {
				vals = append(vals, uv)
			}
		}
	}
	return vals
}

// Stream scrubs text that arrives in pieces (a stream read in chunks), so
// that a secret split between two pieces is replaced too: each piece's
// end that could begin a secret the next piece completes is held back,
// less than the longest form of a secret, and passed on with the next
// piece. The zero Stream and one of nil Secrets pass text as it is.
type Stream struct {
	s    *Secrets
	held string
}

// NewStream returns a Stream that replaces the secrets of s.
func NewStream(s *Secrets) *Stream { return &Stream{s: s} }

// Next is the scrubbed text of what was held back and piece that can be
// passed on. When more text may continue piece (more is true), the end
// that may begin a secret is held back; when not (the end of a line, of
// the stream), nothing is.
func (st *Stream) Next(piece string, more bool) string {
	text := st.held + piece
	st.held = ""
	if st.s == nil {
		return text
	}
	r := st.s.current()
	if r.replace == nil {
		return text
	}
	if more {
		cut := max(0, len(text)-(r.longest()-1))
		cut = pastSecrets(text, cut, r.forms)
		st.held = strings.Clone(text[cut:])
		text = text[:cut]
	}
	return r.replace.Replace(text)
}

// pastSecrets moves cut past every form that begins before it and ends
// after it, so that text[:cut] and text[cut:] are scrubbed apart without
// cutting a secret in two. A form ending after cut begins at most its
// length before it, and so within text when cut is at least the longest
// form's length less one from its end.
func pastSecrets(text string, cut int, forms []string) int {
	for moved := true; moved; {
		moved = false
		for _, f := range forms {
			for i := max(0, cut-len(f)+1); i < cut; {
				j := strings.Index(text[i:], f)
				if j < 0 || i+j >= cut {
					break
				}
				if end := i + j + len(f); end > cut {
					cut, moved = end, true
				}
				i += j + 1
			}
		}
	}
	return cut
}
