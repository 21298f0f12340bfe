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

	mu      sync.Mutex
	key     string // the dynamic values the replacer was built with
	built   bool
	replace *strings.Replacer
	values  []string // static and dynamic values, as given
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

// replacer is the replacer of the current values, and the values.
func (s *Secrets) replacer() (*strings.Replacer, []string) {
	var dyn []string
	if s.dynamic != nil {
		dyn = keep(s.dynamic())
	}
	key := strings.Join(dyn, "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built && key == s.key {
		return s.replace, s.values
	}
	values := slices.Concat(s.static, dyn)
	var forms []string
	for _, v := range values {
		for _, f := range encodings(v) {
			if !slices.Contains(forms, f) {
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
	s.replace, s.values, s.key, s.built = nil, values, key, true
	if len(pairs) > 0 {
		s.replace = strings.NewReplacer(pairs...)
	}
	return s.replace, s.values
}

// encodings are the forms v takes in text: as it is, escaped in a URL's
// query or path, and escaped in a JSON string (with and without HTML
// escaping).
func encodings(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(v)
	forms = append(forms, jsonBody(b.Bytes()))
	b.Reset()
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return append(forms, jsonBody(b.Bytes()))
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
// and for a stdio server every value of env and of
// the variables env_vars passes on. Which of these are secret the
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
		vals = append(vals, v)
		// "Bearer TOKEN", "Basic CREDENTIALS": the credential alone too,
		// as a server may quote it without its scheme.
		if _, cred, ok := strings.Cut(v, " "); ok {
			vals = append(vals, cred)
		}
	}
	for _, name := range cfg.EnvHTTPHeaders {
		lookup(name)
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
	return vals
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
