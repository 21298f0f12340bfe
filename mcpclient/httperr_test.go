package mcpclient

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// The secrets a URL carries in these tests; no error may show them.
const (
	urlSecret  = "q-s3cr3t-9f2"
	passSecret = "p-s3cr3t-4a7"
)

func secretURL(base, path string) string {
	return strings.Replace(base, "://", "://alice:"+passSecret+"@", 1) + path + "?api_key=" + urlSecret + "&team=core"
}

func checkNoSecret(t *testing.T, text string) {
	t.Helper()
	for _, s := range []string{urlSecret, passSecret} {
		if strings.Contains(text, s) {
			t.Errorf("text shows a secret of the URL: %s", text)
		}
	}
}

// expiredCert is a self-signed certificate for 127.0.0.1 that expired an
// hour ago.
func expiredCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "expired"},
		NotBefore:    time.Now().Add(-48 * time.Hour),
		NotAfter:     time.Now().Add(-time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestHTTPFailuresInPlainWords: each way an HTTP server fails at startup
// is said in words a person can act on, naming the server and the config
// file, and never showing a secret of its URL.
func TestHTTPFailuresInPlainWords(t *testing.T) {
	status := func(code int, seen *http.Request, mu *sync.Mutex) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			*seen = *r.Clone(r.Context())
			mu.Unlock()
			http.Error(w, "no", code)
		})
	}
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return "http://" + ln.Addr().String()
	}
	for _, tc := range []struct {
		name    string
		code    int    // served status, 0 for no server
		tls     bool   // serve TLS with a certificate nobody trusts
		expired bool   // with TLS, a certificate that has expired
		host    string // replace 127.0.0.1 in the URL
		scheme  string // replace the scheme of the URL
		path    string
		headers map[string]string
		want    []string
	}{
		{name: "refused", want: []string{"nothing is listening at http://REDACTED@127.0.0.1:", "/mcp?api_key=REDACTED&team=REDACTED (connection refused)"}},
		{name: "404", code: 404, path: "/api", want: []string{"answered 404 Not Found: there is no MCP endpoint at this URL", "servers usually serve it at /mcp (try http://REDACTED@127.0.0.1:", "/api/mcp?api_key=REDACTED&team=REDACTED)"}},
		{name: "404 at /mcp", code: 404, path: "/mcp", want: []string{"answered 404 Not Found", "check the URL in the server's documentation"}},
		// An SSE URL given as Streamable HTTP: /mcp in place of /sse, or type "sse".
		{name: "404 at /sse", code: 404, path: "/v1/sse", want: []string{"answered 404 Not Found", "usually serves Streamable HTTP at the same URL with /mcp in place of /sse (try http://REDACTED@127.0.0.1:", `/v1/mcp?api_key=REDACTED&team=REDACTED), or give this URL type "sse"`}},
		{name: "401", code: 401, path: "/mcp", want: []string{"answered 401 Unauthorized: the server needs authorization; give it with bearer_token_env_var", "env_http_headers or http_headers"}},
		{name: "403 with a token", code: 403, path: "/mcp", headers: map[string]string{"Authorization": "Bearer x"}, want: []string{"answered 403 Forbidden: the server refused the authorization sent"}},
		{name: "tls untrusted", code: 200, tls: true, path: "/mcp", want: []string{"signed by an authority this machine does not trust"}},
		// httptest's certificate names 127.0.0.1 and example.com, not localhost.
		{name: "tls host name", code: 200, tls: true, host: "localhost", path: "/mcp", want: []string{"the TLS certificate of https://REDACTED@localhost:", "is not for this host name"}},
		{name: "tls expired", code: 200, tls: true, expired: true, path: "/mcp", want: []string{"the TLS certificate of https://REDACTED@127.0.0.1:", "has expired or is not valid yet (is this machine's clock right?)"}},
		{name: "not tls", code: 200, scheme: "https", path: "/mcp", want: []string{"does not speak TLS at this port (try http:// instead of https://)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen http.Request
				base string
			)
			switch {
			case tc.code == 0:
				base = refused()
			case tc.tls:
				srv := httptest.NewUnstartedServer(status(tc.code, &seen, &mu))
				if tc.expired {
					srv.TLS = &tls.Config{Certificates: []tls.Certificate{expiredCert(t)}}
				}
				srv.StartTLS()
				defer srv.Close()
				base = srv.URL
			default:
				srv := httptest.NewServer(status(tc.code, &seen, &mu))
				defer srv.Close()
				base = srv.URL
			}
			if tc.scheme != "" {
				base = tc.scheme + strings.TrimPrefix(base, "http")
			}
			if tc.host != "" {
				base = strings.Replace(base, "127.0.0.1", tc.host, 1)
			}
			path := tc.path
			if path == "" {
				path = "/mcp"
			}
			cfg := &config.ServerConfig{URL: secretURL(base, path), HTTPHeaders: tc.headers, Source: "/home/u/proj/.mcp.json"}
			_, err := Connect(testCtx(t), Options{Name: "web", Config: cfg})
			if err == nil {
				t.Fatal("Connect succeeded")
			}
			msg := err.Error()
			checkNoSecret(t, msg)
			for _, w := range append([]string{`server "web": `, ` (server defined in /home/u/proj/.mcp.json)`}, tc.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			if tc.code == 0 && !errors.Is(err, ErrUnreachable) {
				t.Errorf("refused: not ErrUnreachable: %v", err)
			}
			// The server got the real URL: query and userinfo intact.
			mu.Lock()
			defer mu.Unlock()
			if tc.code != 0 && !tc.tls && tc.scheme == "" {
				user, pass, _ := seen.BasicAuth()
				if seen.URL.Query().Get("api_key") != urlSecret || (tc.headers == nil && (user != "alice" || pass != passSecret)) {
					t.Errorf("server saw query %q, basic auth %q:%q", seen.URL.RawQuery, user, pass)
				}
			}
		})
	}
}
