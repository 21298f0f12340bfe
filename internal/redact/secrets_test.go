package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

func TestSecretsString(t *testing.T) {
	const tok = `tok/s3cr3t+"<x>"`
	s := NewSecrets([]string{tok, "short", "pass-s3cr3t", "pass-s3cr3t-longer"}, nil)
	for _, tc := range []struct{ in, want string }{
		{"no secret here", "no secret here"},
		{"Bearer " + tok + " refused", "Bearer REDACTED refused"},
		{"url ?t=" + url.QueryEscape(tok), "url ?t=REDACTED"},
		{"path /" + url.PathEscape(tok) + "/x", "path /REDACTED/x"},
		{`json "` + jsonBody(mustJSON(tok, true)) + `"`, `json "REDACTED"`},
		{`json "` + jsonBody(mustJSON(tok, false)) + `"`, `json "REDACTED"`},
		// The longer secret is replaced whole, not around the shorter.
		{"pass-s3cr3t-longer and pass-s3cr3t", "REDACTED and REDACTED"},
		// Too short to be a secret: left alone.
		{"short", "short"},
	} {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var none *Secrets
	if got := none.String("x " + tok); got != "x "+tok {
		t.Errorf("nil Secrets changed the text: %q", got)
	}
}

func mustJSON(v string, html bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	enc.Encode(v)
	return b.Bytes()
}

// Dynamic secrets (OAuth tokens) are asked for at each use: a token
// renewed after the Secrets were built is replaced too.
func TestSecretsDynamic(t *testing.T) {
	var current atomic.Value
	current.Store("access-token-1")
	s := NewSecrets([]string{"static-s3cr3t"}, func() []string { return []string{current.Load().(string)} })
	if got := s.String("access-token-1 static-s3cr3t"); got != "REDACTED REDACTED" {
		t.Errorf("got %q", got)
	}
	current.Store("access-token-2")
	if got := s.String("access-token-1 access-token-2"); got != "access-token-1 REDACTED" {
		t.Errorf("after the renewal: %q", got)
	}
}

func TestSecretsJSON(t *testing.T) {
	const sec = "s3cr3t-value"
	s := NewSecrets([]string{sec, "12345678901"}, nil)
	for _, tc := range []struct{ in, want string }{
		{`{"a":"x"}`, `{"a":"x"}`},
		{`{"msg":"token s3cr3t-value refused","n":1}`, `{"msg":"token REDACTED refused","n":1}`},
		// Escapes the replacement cannot see: decoded, encoded again.
		{`{"msg":"\u0073\u0033cr3t-value"}`, `{"msg":"REDACTED"}`},
		{`["a\/s3cr3t-value"]`, `["a/REDACTED"]`},
		// A secret that is a number becomes a string: still JSON.
		{`{"pin":12345678901,"z":2}`, `{"pin":"REDACTED","z":2}`},
		// In a key.
		{`{"s3cr3t-value":1}`, `{"REDACTED":1}`},
		// Escapes that hide no secret: the bytes as they were.
		{`{"b":"\u003c","a":1}`, `{"b":"\u003c","a":1}`},
		// Not JSON: a JSON string of the scrubbed text.
		{`oops s3cr3t-value`, `"oops REDACTED"`},
	} {
		got := s.JSON(json.RawMessage(tc.in))
		if string(got) != tc.want {
			t.Errorf("JSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("JSON(%s) = %s is not JSON", tc.in, got)
		}
	}
}

func TestServerValues(t *testing.T) {
	env := config.MapLookup(map[string]string{
		"TOKEN":    "bearer-s3cr3t",
		"API_KEY":  "header-s3cr3t",
		"PASSED":   "passed-s3cr3t",
		"HOME":     "/home/someone",
		"UNPASSED": "not-given-s3cr3t",
		"CLIENT":   "client-s3cr3t",
	})
	cfg := &config.ServerConfig{
		URL:               "https://bob:userinfo-s3cr3t@h/sk-path/mcp?api_key=query-s3cr3t&bare-s3cr3t&v=1",
		BearerTokenEnvVar: "TOKEN",
		HTTPHeaders:       map[string]string{"X-Static": "static-s3cr3t", "Authorization": "Basic basic-s3cr3t"},
		EnvHTTPHeaders:    map[string]string{"X-Key": "API_KEY"},
		Env:               map[string]string{"DB": "env-s3cr3t", "SHORT": "1"},
		EnvVars:           []string{"PASSED"},
		OAuth:             &config.OAuthConfig{ClientSecretEnvVar: "CLIENT"},
	}
	got := NewSecrets(ServerValues(cfg, env), nil)
	text := strings.Join([]string{
		"bearer-s3cr3t", "header-s3cr3t", "passed-s3cr3t", "static-s3cr3t", "basic-s3cr3t",
		"env-s3cr3t", "userinfo-s3cr3t", "query-s3cr3t", "bare-s3cr3t", "sk-path", "client-s3cr3t",
		base64.StdEncoding.EncodeToString([]byte("bob:userinfo-s3cr3t")),
	}, " ")
	if out := got.String(text); strings.Trim(strings.ReplaceAll(out, "REDACTED", ""), " ") != "" {
		t.Errorf("secrets left in %q", out)
	}
	// Not secrets: the allowlisted environment, variables not passed on,
	// values too short, the rest of the URL.
	for _, keep := range []string{"/home/someone", "not-given-s3cr3t", "1", "mcp", "api_key", "bob"} {
		if out := got.String(keep); out != keep {
			t.Errorf("%q became %q", keep, out)
		}
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	s := NewSecrets([]string{"s3cr3t-value"}, nil)
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil), s)).With("pre", "with s3cr3t-value")
	log.Info("message s3cr3t-value", "line", "x s3cr3t-value", "err", errString("e s3cr3t-value"),
		"raw", json.RawMessage(`{"d":"s3cr3t-value"}`), slog.Group("g", "in", "s3cr3t-value"), "n", 3)
	if strings.Contains(buf.String(), "s3cr3t") {
		t.Errorf("the log shows the secret: %s", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"pre": "with REDACTED", "msg": "message REDACTED", "line": "x REDACTED", "err": "e REDACTED",
		"raw": map[string]any{"d": "REDACTED"}, "g": map[string]any{"in": "REDACTED"}, "n": float64(3)}
	for k := range rec {
		if !slices.Contains([]string{"pre", "msg", "line", "err", "raw", "g", "n"}, k) {
			delete(rec, k)
		}
	}
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// A Stream replaces a secret wherever the pieces cut it, and passes the
// rest on as it came.
func TestStreamAcrossPieces(t *testing.T) {
	const secret = "s3cr3t-value-42"
	s := NewSecrets([]string{secret}, nil)
	text := "before " + secret + " middle " + secret + " after"
	want := "before REDACTED middle REDACTED after"
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for cut2 := cut1; cut2 <= len(text); cut2 += 3 {
			st := NewStream(s)
			got := st.Next(text[:cut1], true) + st.Next(text[cut1:cut2], true) + st.Next(text[cut2:], false)
			if got != want {
				t.Fatalf("cut at %d and %d: %q, want %q", cut1, cut2, got, want)
			}
		}
	}
	// Text that holds no secret is passed on but for what could begin one.
	st := NewStream(s)
	if got := st.Next("plain text", true); !strings.HasPrefix("plain text", got) || len(got) < len("plain text")-len(secret)*4 {
		t.Errorf("held back too much: %q", got)
	}
	var none Stream
	if got := none.Next("x "+secret, true); got != "x "+secret {
		t.Errorf("a Stream without secrets changed the text: %q", got)
	}
}

// The base64 of a secret is replaced: whole (standard and URL alphabets,
// with and without padding) and inside the base64 of a longer text, as a
// Basic header is of "user:" + secret, where the few characters the bytes
// around it share with it stay.
func TestSecretsBase64(t *testing.T) {
	const secret = "p4ss+w/rd?s3cr3t~~" // bytes whose base64 differs between the alphabets
	s := NewSecrets([]string{secret}, nil)
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if got := s.String("x " + e.EncodeToString([]byte(secret)) + " y"); got != "x REDACTED y" {
			t.Errorf("whole base64: %q", got)
		}
		for _, user := range []string{"", "u", "us", "use", "user", "admin@example.com"} {
			for _, after := range []string{"", "!", "!!", "!!!"} {
				enc := e.EncodeToString([]byte(user + ":" + secret + after))
				got := s.String("Authorization: Basic " + enc)
				if !strings.Contains(got, "REDACTED") {
					t.Errorf("base64 of %q: %q", user+":"+secret+after, got)
					continue
				}
				// What is left of the encoding is the groups of the bytes
				// around the secret, which hold at most two of its bytes
				// on each side.
				rest := strings.TrimPrefix(got, "Authorization: Basic ")
				before, tail, _ := strings.Cut(rest, "REDACTED")
				if len(before) > (len(user)+1+2)/3*4 || len(strings.TrimRight(tail, "=")) > (len(after)+2+2)/3*4 {
					t.Errorf("base64 of %q: %q leaves too much", user+":"+secret+after, got)
				}
			}
		}
	}
}

// The values of a command line's secret-looking flags, in both forms; and
// what a Basic header encodes, and ${VAR} put into the definition.
func TestServerValuesFlagsAndExpanded(t *testing.T) {
	cfg := &config.ServerConfig{
		Command: "npx",
		Args: []string{"-y", "@acme/mcp", "--api-key", "k1-s3cr3t", "--token=t1-s3cr3t", "--DB_PASSWORD", "p1-s3cr3t",
			"--clientSecret=c1-s3cr3t", "--verbose", "--port", "8080", "--name=not-secret-name", "--key-file", "--x"},
		HTTPHeaders: map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:basic-pass-s3cr3t"))},
		Expanded:    []string{"expanded-plain-word"},
	}
	got := ServerValues(cfg, nil)
	for _, want := range []string{"k1-s3cr3t", "t1-s3cr3t", "p1-s3cr3t", "c1-s3cr3t", "basic-pass-s3cr3t", "bob:basic-pass-s3cr3t", "expanded-plain-word"} {
		if !slices.Contains(got, want) {
			t.Errorf("ServerValues lacks %q: %q", want, got)
		}
	}
	for _, not := range []string{"8080", "not-secret-name", "@acme/mcp", "--x"} {
		if slices.Contains(got, not) {
			t.Errorf("ServerValues has %q: %q", not, got)
		}
	}
}
