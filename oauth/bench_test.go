package oauth

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// BenchmarkToken measures what every request of an OAuth connection pays
// for its bearer token: the stored token (one stat of the credentials file
// to see that it did not change, then a copy) against go-sdk's default of a
// token held in memory (oauth2.StaticTokenSource), in the same run.
//
//	go test -run '^$' -bench BenchmarkToken -count 6 ./oauth/
func BenchmarkToken(b *testing.B) {
	store := &Store{Dir: filepath.Join(b.TempDir(), "credentials")}
	srv := Server{Name: "s", URL: "https://mcp.example.com/mcp"}
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	m := NewManager(Options{Store: store, Now: func() time.Time { return now }})
	defer m.Close()
	if err := m.save(srv.Key(), &Credentials{URL: srv.URL, AccessToken: "at", RefreshToken: "rt", Expiry: now.Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	b.Run("stored", func(b *testing.B) {
		ts, _ := m.Handler(srv, HandlerOptions{}).TokenSource(context.Background())
		for b.Loop() {
			if tok, err := ts.Token(); err != nil || tok == nil {
				b.Fatal(tok, err)
			}
		}
	})
	b.Run("baseline=static", func(b *testing.B) {
		ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "at"})
		for b.Loop() {
			if tok, err := ts.Token(); err != nil || tok == nil {
				b.Fatal(tok, err)
			}
		}
	})
}
