package oauth

import (
	"errors"
	"fmt"
	"time"
)

// Where a server's tokens are kept, by its mcp_oauth_credentials_store
// (keyring.go): the credentials file (Store), the OS keychain, or the
// keychain with the file where there is none. Every read and write of
// tokens goes through stored, keep and forget; the clients registered
// dynamically stay in the file whatever the store (registrations.go).

// keyringRetry is how long a keychain that failed is not asked again:
// a missing D-Bus session or a locked keychain fails every call the same
// way, and asking costs a process (dbus-launch) or a round trip each time.
const keyringRetry = 30 * time.Second

// DefaultKeyringTimeout bounds one call of the OS keychain
// (Options.KeyringTimeout). Unlocking a keychain can wait for a person:
// on Linux go-keyring waits for the Secret Service's unlock prompt with
// no time limit, and macOS's security command can wait on a dialog. On a
// machine where no one sees the prompt (an SSH session, a locked screen)
// that would stop a server's startup, the scrubbing of its messages
// (Secrets) and doctor (Status) for good.
const DefaultKeyringTimeout = 5 * time.Second

// keyringTimeoutError is a keychain call that did not answer in time.
type keyringTimeoutError struct{ after time.Duration }

func (e *keyringTimeoutError) Error() string {
	return fmt.Sprintf("it did not answer within %v; it may be locked, waiting for a password prompt", e.after)
}

// keyringCall runs f, one call of m's keychain, for at most
// KeyringTimeout. go-keyring's calls take no context, so f runs on a
// goroutine of its own that a timeout leaves to end when the keychain
// answers (or with the process); until it has, every call fails at once
// as timed out, so a stuck keychain holds one goroutine, not one per
// call. A timeout is an error of the keychain, not a missing entry:
// noteKeyring records it, "auto" uses the file and "keyring" fails with
// a KeyringError.
func keyringCall[T any](m *Manager, f func() (T, error)) (T, error) {
	var zero T
	timedOut := &keyringTimeoutError{after: m.opts.KeyringTimeout}
	m.mu.Lock()
	if m.keyringPending != nil {
		select {
		case <-m.keyringPending:
			m.keyringPending = nil
		default:
			m.mu.Unlock()
			return zero, timedOut
		}
	}
	m.mu.Unlock()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // the goroutine never waits for a reader
	ended := make(chan struct{})
	go func() {
		v, err := f()
		done <- result{v, err}
		close(ended)
	}()
	timer := time.NewTimer(m.opts.KeyringTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, r.err
	case <-timer.C:
	}
	m.mu.Lock()
	m.keyringPending = ended
	m.mu.Unlock()
	return zero, timedOut
}

// store is srv's credentials store: file unless auto or keyring.
func (s Server) store() string {
	switch s.CredentialsStore {
	case StoreAuto, StoreKeyring:
		return s.CredentialsStore
	}
	return StoreFile
}

// keyringEntry is what the keychain held for one account when last read.
type keyringEntry struct {
	c *Credentials // nil: none
}

// stored returns srv's credentials (nil when none) from its store. fresh
// reads the keychain again rather than use what was read before (the
// file is read again whenever it changed): callers that found a token
// wanting (a 401, a refresh) want what another process may have stored
// since. In keyring mode a keychain that cannot be used is a
// *KeyringError; in auto mode the file is used instead.
func (m *Manager) stored(srv Server, fresh bool) (*Credentials, error) {
	switch srv.store() {
	case StoreKeyring:
		c, err := m.keyringGet(srv, fresh)
		if keyringUnavailable(err) {
			return nil, &KeyringError{Server: srv.Name, Source: srv.StoreSource, Err: err}
		}
		return c, nil
	case StoreAuto:
		if c, err := m.keyringGet(srv, fresh); err == nil && c != nil {
			return c, nil
		}
	}
	return m.credentials(srv.Key())
}

// keep stores c as srv's credentials. In auto mode a keychain that
// cannot be used leaves them in the file; one that can takes them, and
// the file's copy goes (as Codex removes its file's).
func (m *Manager) keep(srv Server, c *Credentials) error {
	switch srv.store() {
	case StoreKeyring:
		if err := m.keyringSet(srv, c); err != nil {
			return &KeyringError{Server: srv.Name, Source: srv.StoreSource, Err: err}
		}
		return nil
	case StoreAuto:
		if err := m.keyringSet(srv, c); err == nil {
			m.removeFromFile(srv.Key(), nil)
			return nil
		}
	}
	return m.save(srv.Key(), c)
}

// forget removes srv's credentials from the keychain and the file, those
// whose refresh token is rt when rt is not empty (a login elsewhere may
// have replaced them meanwhile), and reports whether there were any. A
// keychain that cannot be used is an error only in keyring mode.
func (m *Manager) forget(srv Server, rt string) (bool, error) {
	removed := false
	var kerr error
	if srv.store() != StoreFile {
		r, err := m.keyringDelete(srv, rt)
		removed = r
		if keyringUnavailable(err) && srv.store() == StoreKeyring {
			kerr = &KeyringError{Server: srv.Name, Source: srv.StoreSource, Err: err}
		}
	}
	var keepIf func(*Credentials) bool
	if rt != "" {
		keepIf = func(c *Credentials) bool { return c.RefreshToken != rt }
	}
	r, err := m.removeFromFile(srv.Key(), keepIf)
	return removed || r, errors.Join(kerr, err)
}

// removeFromFile removes key's entry from the file, unless keepIf says to
// keep it, and reports whether it did.
func (m *Manager) removeFromFile(key Key, keepIf func(*Credentials) bool) (bool, error) {
	removed := false
	err := m.opts.Store.Update(func(entries map[string]*Credentials) error {
		c := entries[key.ID()]
		if c == nil || keepIf != nil && keepIf(c) {
			return nil
		}
		delete(entries, key.ID())
		removed = true
		return nil
	})
	m.invalidate()
	return removed, err
}

// keyringDown returns the error of a keychain that failed within
// keyringRetry, else nil.
func (m *Manager) keyringDownErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keyringFailed != nil && m.opts.Now().Before(m.keyringFailedAt.Add(keyringRetry)) {
		return m.keyringFailed
	}
	return nil
}

// noteKeyring records how a call of the keychain went.
func (m *Manager) noteKeyring(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keyringUnavailable(err) {
		if m.keyringFailed == nil {
			m.opts.Logger.Warn("the OS keychain cannot be used", "err", err)
		}
		m.keyringFailed, m.keyringFailedAt = err, m.opts.Now()
		return
	}
	m.keyringFailed = nil
}

// keyringGet reads srv's entry: Codex's account, or the one a Codex build
// that keeps JSON members in order writes.
func (m *Manager) keyringGet(srv Server, fresh bool) (*Credentials, error) {
	if err := m.keyringDownErr(); err != nil {
		return nil, err
	}
	account := keyringAccount(srv.Name, srv.URL)
	m.mu.Lock()
	e, cached := m.keyringCache[account]
	m.mu.Unlock()
	if cached && !fresh {
		return e.c.clone(), nil
	}
	var secret string
	var err error
	for _, acct := range []string{account, srv.Name + "|" + keyringDigest(srv.URL, false)} {
		secret, err = keyringCall(m, func() (string, error) { return m.opts.Keyring.Get(keyringService, acct) })
		if !errors.Is(err, ErrKeyringNotFound) {
			break
		}
	}
	m.noteKeyring(err)
	var c *Credentials
	switch {
	case errors.Is(err, ErrKeyringNotFound):
	case err != nil:
		return nil, err
	default:
		var ok bool
		c, ok, err = decodeKeyring(srv, secret)
		if err != nil {
			// Not the tokens of anyone: the next authorization replaces it.
			m.opts.Logger.Warn("keychain entry ignored", "server", srv.Name, "err", err)
		}
		if !ok {
			c = nil
		}
	}
	m.mu.Lock()
	m.keyringCache[account] = keyringEntry{c: c}
	m.mu.Unlock()
	return c.clone(), nil
}

func (m *Manager) keyringSet(srv Server, c *Credentials) error {
	if err := m.keyringDownErr(); err != nil {
		return err
	}
	secret, err := encodeKeyring(srv, c, m.opts.Now())
	if err != nil {
		return err
	}
	account := keyringAccount(srv.Name, srv.URL)
	_, err = keyringCall(m, func() (struct{}, error) { return struct{}{}, m.opts.Keyring.Set(keyringService, account, secret) })
	m.noteKeyring(err)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.keyringCache[account] = keyringEntry{c: c.clone()}
	m.mu.Unlock()
	return nil
}

// keyringDelete removes srv's entry (if its refresh token is rt, when rt
// is not empty).
func (m *Manager) keyringDelete(srv Server, rt string) (bool, error) {
	if err := m.keyringDownErr(); err != nil {
		return false, err
	}
	if rt != "" {
		c, err := m.keyringGet(srv, true)
		if err != nil || c == nil || c.RefreshToken != rt {
			return false, err
		}
	}
	account := keyringAccount(srv.Name, srv.URL)
	removed := false
	var firstErr error
	for _, acct := range []string{account, srv.Name + "|" + keyringDigest(srv.URL, false)} {
		_, err := keyringCall(m, func() (struct{}, error) { return struct{}{}, m.opts.Keyring.Delete(keyringService, acct) })
		switch {
		case err == nil:
			removed = true
		case !errors.Is(err, ErrKeyringNotFound) && firstErr == nil:
			firstErr = err
		}
	}
	m.noteKeyring(firstErr)
	m.mu.Lock()
	delete(m.keyringCache, account)
	m.mu.Unlock()
	return removed, firstErr
}

// clone is a copy of c (nil for nil).
func (c *Credentials) clone() *Credentials {
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}
