package oauth

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// go-sdk's Streamable HTTP client asks its OAuthHandler to authorize once
// per request, on a 401 or 403, and then sends the request again; a 401
// or 403 to that second sending fails the whole connection. Two cases
// reach it: a 401 (the token expired early, the grant was revoked) whose
// refresh or new authorization grants the old scopes, and then a 403
// insufficient_scope because this request needs more (a step-up); and a
// server that refuses what a new authorization granted. The transport of
// Handler.Transport sees go-sdk's requests and answers the second sending:
// a step-up after a 401 is made there, on the same request, and a refusal
// after that is this request's error, not the connection's.

// Transport wraps base (nil: http.DefaultTransport), the transport of the
// connection's HTTP client, to answer a 401 or 403 to a request go-sdk
// sends again after asking the handler: it makes the step-up a 403
// insufficient_scope asks for after a 401, once, and otherwise fails the
// request (the authorization's error, a *NeedsAuthorizationError, or a
// *ForbiddenError for a 403 no authorization changes) rather than hand
// go-sdk a refusal that would end the connection.
func (h *Handler) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &retryTransport{base: base, h: h, refused: map[[sha256.Size]byte]refusalKind{}}
}

type retryTransport struct {
	base http.RoundTripper
	h    *Handler

	mu sync.Mutex
	// refused are the requests answered 401 or 403 whose second sending
	// go-sdk may make, by the digest of their body, with what that answer
	// was; order is their order, for the bound.
	refused map[[sha256.Size]byte]refusalKind
	order   [][sha256.Size]byte
}

// maxRefused bounds the requests remembered: go-sdk sends a request again
// right after its authorization, or never (the authorization failed).
const maxRefused = 64

// refusalKind is what a 401 or 403 asks for.
type refusalKind int

const (
	notRefused        refusalKind = iota
	unauthorized                  // 401: a token, or a fresh one
	insufficientScope             // 403 insufficient_scope: more scopes
	forbidden                     // any other 403: nothing a token changes
)

func refusalOf(resp *http.Response) refusalKind {
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return unauthorized
	case resp.StatusCode != http.StatusForbidden:
		return notRefused
	case bearerError(resp.Header) == "insufficient_scope":
		return insufficientScope
	}
	return forbidden
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") == "" {
		// Without a token, perhaps because the stored one expired and its
		// refresh runs (tokenSource.Token): the request waits for it here,
		// outside go-sdk's connection lock, while its own context lasts.
		tok, err := t.h.awaitRefresh(req.Context())
		if err != nil {
			return nil, err
		}
		if tok != "" {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || req.GetBody == nil {
		return resp, err
	}
	now := refusalOf(resp)
	if now == notRefused {
		if t.waiting() {
			// Perhaps the second sending of a refused request, answered:
			// it is not waited for any more. (Hashing a body costs; only
			// while a refusal waits.)
			if sum, ok := digest(req); ok {
				t.take(sum)
			}
		}
		return resp, nil
	}
	sum, ok := digest(req)
	if !ok {
		return resp, nil
	}
	first, again := t.take(sum)
	if !again {
		// The first refusal: go-sdk asks the handler to authorize and, if
		// it does, sends the request again.
		t.remember(sum, now)
		return resp, nil
	}
	srv := t.h.srv.Name
	switch {
	case first == unauthorized && now == insufficientScope:
		// Authorized again for the 401, the request needs more scopes:
		// the step-up go-sdk would not make.
		if err := t.h.Authorize(req.Context(), req, resp); err != nil {
			return nil, err
		}
		next, err := t.resend(req)
		if err != nil {
			return nil, err
		}
		if now = refusalOf(next); now == notRefused {
			return next, nil
		}
		resp = next
	case first == forbidden:
		// No authorization was made: the server forbids the request.
		drain(resp)
		return nil, &ForbiddenError{Server: srv, Status: resp.Status}
	}
	drain(resp)
	if now == forbidden {
		return nil, &ForbiddenError{Server: srv, Status: resp.Status}
	}
	return nil, &NeedsAuthorizationError{Server: srv, Reason: fmt.Sprintf("the server answered %s to the request after a new authorization; the next request asks again", resp.Status)}
}

// ForbiddenError is a request a server refused with 403 for a reason no
// authorization changes (not insufficient_scope).
type ForbiddenError struct {
	Server, Status string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("server %q answered %s to the request (not for want of a scope: a new authorization does not help)", e.Server, e.Status)
}

// resend sends req again, with the handler's current token.
func (t *retryTransport) resend(req *http.Request) (*http.Response, error) {
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	tok, err := tokenSource{h: t.h}.Token()
	if err != nil {
		return nil, err
	}
	if tok != nil {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	}
	return t.base.RoundTrip(r)
}

// waiting reports whether a refused request may still be sent again.
func (t *retryTransport) waiting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.refused) > 0
}

// take reports whether the request of sum was refused before, forgetting
// it, and how.
func (t *retryTransport) take(sum [sha256.Size]byte) (refusalKind, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	kind, ok := t.refused[sum]
	delete(t.refused, sum)
	return kind, ok
}

func (t *retryTransport) remember(sum [sha256.Size]byte, kind refusalKind) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refused[sum] = kind
	t.order = append(t.order, sum)
	for len(t.order) > maxRefused {
		delete(t.refused, t.order[0])
		t.order = t.order[1:]
	}
}

// digest identifies a request by its body (a JSON-RPC message: go-sdk
// sends the same bytes again, and its ids never repeat).
func digest(req *http.Request) ([sha256.Size]byte, bool) {
	body, err := req.GetBody()
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	defer body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, body); err != nil {
		return [sha256.Size]byte{}, false
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, true
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
