package oauth

import (
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"golang.org/x/oauth2"
)

// sentSecrets are the secrets a client sent to an authorization server in
// its token requests (codes, verifiers, refresh tokens, client secrets, in
// the form or a Basic header). An authorization server's error may quote
// the request it refuses; whatever of it reaches an error or a log has
// these replaced, as they were sent and as the request encoded them.
type sentSecrets struct {
	mu   sync.Mutex
	vals []string
}

// secretFields are the form fields of token requests that hold secrets.
var secretFields = []string{"code", "code_verifier", "refresh_token", "client_secret", "client_assertion", "assertion", "subject_token", "actor_token"}

func (s *sentSecrets) note(v string) {
	if len(v) < 4 { // nothing that short is a secret, and it would blank out words
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, form := range []string{v, url.QueryEscape(v)} {
		if !slices.Contains(s.vals, form) {
			s.vals = append(s.vals, form)
		}
	}
	// Longest first: a secret inside another (a client secret inside its
	// Basic header) must not break the other's replacement.
	slices.SortFunc(s.vals, func(a, b string) int { return len(b) - len(a) })
}

// noteRequest notes the secrets of a token request whose form is form.
func (s *sentSecrets) noteRequest(h http.Header, form url.Values) {
	for _, k := range secretFields {
		for _, v := range form[k] {
			s.note(v)
		}
	}
	authz := h.Get("Authorization")
	if b, ok := strings.CutPrefix(authz, "Basic "); ok {
		s.note(b)
		if raw, err := base64.StdEncoding.DecodeString(b); err == nil {
			if _, secret, ok := strings.Cut(string(raw), ":"); ok {
				s.note(secret)
				if u, err := url.QueryUnescape(secret); err == nil {
					s.note(u)
				}
			}
		}
	} else if b, ok := strings.CutPrefix(authz, "Bearer "); ok {
		s.note(b)
	}
}

// redact replaces every noted secret in msg.
func (s *sentSecrets) redact(msg string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.vals {
		msg = strings.ReplaceAll(msg, v, "REDACTED")
	}
	return msg
}

// scrub is err as an error or a log may carry it: an oauth2.RetrieveError
// by its code and description (never its body), and any noted secret
// replaced.
func (s *sentSecrets) scrub(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return errors.New(s.redact(describeRetrieve(re)))
	}
	if msg := err.Error(); s.redact(msg) != msg {
		return errors.New(s.redact(msg))
	}
	return err
}

// secretsTransport notes the secrets of the form posts (the token
// requests) it sends.
type secretsTransport struct {
	base http.RoundTripper
	sent *sentSecrets
}

func (t *secretsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			raw, _ := io.ReadAll(io.LimitReader(body, 1<<20))
			body.Close()
			if form, err := url.ParseQuery(string(raw)); err == nil {
				t.sent.noteRequest(req.Header, form)
			}
		}
	}
	return t.base.RoundTrip(req)
}
