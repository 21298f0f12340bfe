package catalog

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

const secretToken = "s3cr3t-T0KEN-value-0123456789"

func stdioConfig() *config.ServerConfig {
	return &config.ServerConfig{
		Name:    "fs",
		Command: "node",
		Args:    []string{"server.js", "--root", "/w"},
		Env:     map[string]string{"API_KEY": secretToken, "MODE": "x"},
		EnvVars: []string{"PASS_ME", "AND_ME"},
	}
}

func httpConfig() *config.ServerConfig {
	return &config.ServerConfig{
		Name:              "web",
		URL:               "https://example.com/mcp",
		BearerTokenEnvVar: "WEB_TOKEN",
		HTTPHeaders:       map[string]string{"X-Api-Key": secretToken},
		EnvHTTPHeaders:    map[string]string{"X-Org": "ORG_ID"},
	}
}

func baseEnv() map[string]string {
	return map[string]string{"PASS_ME": "1", "AND_ME": "2", "WEB_TOKEN": secretToken, "ORG_ID": "org-1"}
}

type scopeInput struct {
	server   string
	cfg      *config.ServerConfig
	env      map[string]string
	scope    string
	fallback string
}

func (in scopeInput) key() string {
	return ScopeKey(in.server, in.cfg, config.MapLookup(in.env), json.RawMessage(in.scope), in.fallback)
}

func TestScopeKeyDiffers(t *testing.T) {
	stdio := func(f func(*scopeInput)) scopeInput {
		in := scopeInput{"fs", stdioConfig(), baseEnv(), `{"account":"a","workspace":"/w"}`, "/home/u/proj"}
		f(&in)
		return in
	}
	http := func(f func(*scopeInput)) scopeInput {
		in := scopeInput{"web", httpConfig(), baseEnv(), `{"account":"a"}`, "/home/u/proj"}
		f(&in)
		return in
	}
	tests := []struct {
		name string
		a, b scopeInput
	}{
		{"server name", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.server = "fs2" })},
		{"command", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.cfg.Command = "nodejs" })},
		{"args", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.cfg.Args[2] = "/v" })},
		{"args split differently", stdio(func(in *scopeInput) { in.cfg.Args = []string{"a b", "c"} }), stdio(func(in *scopeInput) { in.cfg.Args = []string{"a", "b c"} })},
		{"args nil vs one empty", stdio(func(in *scopeInput) { in.cfg.Args = nil }), stdio(func(in *scopeInput) { in.cfg.Args = []string{""} })},
		{"env value", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.cfg.Env["API_KEY"] = "other" })},
		{"env name", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.cfg.Env["MODE2"] = in.cfg.Env["MODE"]; delete(in.cfg.Env, "MODE") })},
		{"env_vars names", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.cfg.EnvVars = []string{"PASS_ME"} })},
		{"env_vars value", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.env["PASS_ME"] = "changed" })},
		{"env_vars unset vs empty", stdio(func(in *scopeInput) { delete(in.env, "PASS_ME") }), stdio(func(in *scopeInput) { in.env["PASS_ME"] = "" })},
		{"cwd", stdio(func(in *scopeInput) { in.cfg.Cwd = "/a" }), stdio(func(in *scopeInput) { in.cfg.Cwd = "/b" })},
		{"fallback cwd without cwd", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.fallback = "/elsewhere" })},
		{"cwd vs fallback cwd", stdio(func(in *scopeInput) { in.cfg.Cwd = "/a" }), stdio(func(in *scopeInput) { in.fallback = "/a" })},
		{"session scope", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.scope = `{"account":"b","workspace":"/w"}` })},
		{"session scope absent vs empty object", stdio(func(in *scopeInput) { in.scope = "" }), stdio(func(in *scopeInput) { in.scope = "{}" })},
		{"session scope number text", stdio(func(in *scopeInput) { in.scope = `{"n":1}` }), stdio(func(in *scopeInput) { in.scope = `{"n":2}` })},
		{"session scope invalid UTF-8", stdio(func(in *scopeInput) { in.scope = "\"\xff\"" }), stdio(func(in *scopeInput) { in.scope = "\"\xfe\"" })},
		{"protocol version", stdio(func(*scopeInput) {}), stdio(func(in *scopeInput) { in.cfg.ProtocolVersion = "2025-06-18" })},
		{"url", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.URL = "https://example.com/mcp2" })},
		{"bearer token value", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.env["WEB_TOKEN"] = "other" })},
		{"bearer token var", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.BearerTokenEnvVar = "ORG_ID"; in.env["ORG_ID"] = secretToken })},
		{"http header value", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.HTTPHeaders["X-Api-Key"] = "k2" })},
		{"http header name", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.HTTPHeaders = map[string]string{"X-Other": secretToken} })},
		{"env http header value", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.env["ORG_ID"] = "org-2" })},
		{"env http header var", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.EnvHTTPHeaders["X-Org"] = "PASS_ME" })},
		{"header helper", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.HTTPHeadersHelper = "print-token --account a" })},
		{"header helper command", http(func(in *scopeInput) { in.cfg.HTTPHeadersHelper = "print-token --account a" }), http(func(in *scopeInput) { in.cfg.HTTPHeadersHelper = "print-token --account b" })},
		{"streamable http vs sse", http(func(*scopeInput) {}), http(func(in *scopeInput) { in.cfg.SSE = true })},
		{"stdio vs http", stdio(func(*scopeInput) {}), http(func(in *scopeInput) { in.server = "fs" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, kb := tt.a.key(), tt.b.key()
			if ka == kb {
				t.Errorf("same key %s for different inputs", ka)
			}
		})
	}
}

func TestScopeKeyEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b scopeInput
	}{
		{"same input",
			scopeInput{"fs", stdioConfig(), baseEnv(), `{"a":1}`, "/p"},
			scopeInput{"fs", stdioConfig(), baseEnv(), `{"a":1}`, "/p"}},
		{"scope key order and whitespace",
			scopeInput{"fs", stdioConfig(), baseEnv(), `{"b":[1,{"y":2,"x":1}],"a":"\u00e9"}`, "/p"},
			scopeInput{"fs", stdioConfig(), baseEnv(), " { \"a\" : \"é\",\n \"b\": [ 1, {\"x\":1, \"y\":2} ] } ", "/p"}},
		{"empty scope is null",
			scopeInput{"fs", stdioConfig(), baseEnv(), ``, "/p"},
			scopeInput{"fs", stdioConfig(), baseEnv(), `null`, "/p"}},
		{"env_vars order",
			scopeInput{"fs", &config.ServerConfig{Command: "x", EnvVars: []string{"A", "B"}}, baseEnv(), ``, "/p"},
			scopeInput{"fs", &config.ServerConfig{Command: "x", EnvVars: []string{"B", "A"}}, baseEnv(), ``, "/p"}},
		{"fallback cwd ignored when cwd is set",
			scopeInput{"fs", &config.ServerConfig{Command: "x", Cwd: "/c"}, nil, ``, "/p"},
			scopeInput{"fs", &config.ServerConfig{Command: "x", Cwd: "/c"}, nil, ``, "/q"}},
		{"fallback cwd ignored for http",
			scopeInput{"web", httpConfig(), baseEnv(), ``, "/p"},
			scopeInput{"web", httpConfig(), baseEnv(), ``, "/q"}},
		{"filters and timeouts ignored",
			scopeInput{"fs", &config.ServerConfig{Command: "x"}, nil, ``, "/p"},
			scopeInput{"fs", &config.ServerConfig{Command: "x", EnabledTools: []string{"a"}, DisabledTools: []string{"b"}, ToolTimeoutSec: new(5.0), Required: true}, nil, ``, "/p"}},
		{"unrelated env ignored",
			scopeInput{"fs", &config.ServerConfig{Command: "x"}, map[string]string{"OTHER": "1"}, ``, "/p"},
			scopeInput{"fs", &config.ServerConfig{Command: "x"}, map[string]string{"OTHER": "2"}, ``, "/p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ka, kb := tt.a.key(), tt.b.key(); ka != kb {
				t.Errorf("keys differ: %s vs %s", ka, kb)
			}
		})
	}
}

func TestScopeKeyShapeAndSecrets(t *testing.T) {
	hexKey := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, in := range []scopeInput{
		{"fs", stdioConfig(), baseEnv(), `{"token":"` + secretToken + `"}`, "/p"},
		{"web", httpConfig(), baseEnv(), ``, ""},
		{"nil-config", nil, nil, `not json`, ""},
	} {
		k := in.key()
		if !hexKey.MatchString(k) {
			t.Errorf("key %q is not 64 hex digits", k)
		}
		if strings.Contains(k, secretToken) {
			t.Errorf("key contains the secret")
		}
	}
	// A nil Lookup finds nothing: same as an empty environment.
	cfg := httpConfig()
	if a, b := ScopeKey("web", cfg, nil, nil, ""), ScopeKey("web", cfg, config.MapLookup(nil), nil, ""); a != b {
		t.Errorf("nil env %s != empty env %s", a, b)
	}
}

// A definition whose VS Code inputs were given has the scope of the
// definition as written and of its values: another value, another scope;
// the same value, the same scope.
func TestScopeKeyInputs(t *testing.T) {
	in := config.Input{ID: "token", Password: true, File: "/p/.vscode/mcp.json"}
	tmpl := &config.ServerConfig{Name: "gh", URL: "https://h/mcp", HTTPHeaders: map[string]string{"Authorization": "Bearer \uE000input:token\uE001"}, Inputs: []config.Input{in}}
	with := func(v string) *config.ServerConfig {
		c, errs := tmpl.WithInputs(map[string]string{in.Key(): v})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return c
	}
	key := func(c *config.ServerConfig) string { return ScopeKey("gh", c, nil, nil, "") }
	if key(with("tok-a-111111")) == key(with("tok-b-222222")) {
		t.Error("two values of an input share a scope")
	}
	if a1, a2 := key(with("tok-a-111111")), key(with("tok-a-111111")); a1 != a2 {
		t.Error("one value of an input gives two scopes")
	}
	if key(with("tok-a-111111")) == key(tmpl) {
		t.Error("a definition and its inputs' values share a scope")
	}
}
