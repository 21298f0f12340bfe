//go:build unix

package headerhelper

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRunOutput(t *testing.T) {
	const secret = "tok-3f9a8b7c6d5e"
	tests := []struct {
		name    string
		command string
		want    http.Header
		wantErr string // part of the error; "" none
	}{
		{"headers", `printf '{"Authorization":"Bearer %s","x-tenant":"acme"}' "$TOKEN"`,
			http.Header{"Authorization": {"Bearer " + secret}, "X-Tenant": {"acme"}}, ""},
		{"blank around", `printf '\n  {"X-A": "1"}  \n'`, http.Header{"X-A": {"1"}}, ""},
		{"empty object", `echo '{}'`, http.Header{}, ""},
		{"nothing", `true`, nil, "printed nothing"},
		{"not JSON", `echo "$TOKEN"`, nil, "did not print a JSON object of headers"},
		{"array", `echo '["a"]'`, nil, "did not print a JSON object"},
		{"number value", `echo '{"X-N": 5}'`, nil, `gave header "X-N" a value that is not a string`},
		{"bad name", `echo '{"X Bad": "v"}'`, nil, `"X Bad", which is not a valid HTTP header name`},
		{"line break", `printf '{"X-A": "a\\r\\nInjected: 1"}'`, nil, `gave header "X-A" a value HTTP does not allow (a line break)`},
		{"NUL", `printf '{"X-A": "a\\u0000b"}'`, nil, "(a NUL byte)"},
		{"control", `printf '{"X-A": "a\\u0007b"}'`, nil, "(a control character)"},
		{"exit status", `echo "leaked $TOKEN" >&2; exit 3`, nil, "exited with exit status 3 (its"},
		{"too many", `printf '{'; i=0; while [ $i -lt 65 ]; do printf '"X-%d":"v",' $i; i=$((i+1)); done; printf '"Y":"v"}'`, nil, "printed 66 headers, more than 64"},
		{"too long", `head -c 70000 /dev/zero | tr '\0' a`, nil, "printed more than 65536 bytes"},
		{"value too long", `printf '{"X-A":"'; head -c 17000 /dev/zero | tr '\0' a; printf '"}'`, nil, "a value of more than 16384 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Run(context.Background(), Spec{Command: tt.command, Env: []string{"TOKEN=" + secret, "PATH=" + os.Getenv("PATH")}, Timeout: time.Minute})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error quotes the secret: %v", err)
				}
				var he *Error
				if !errors.As(err, &he) || he.Command != tt.command {
					t.Errorf("error %#v does not name the command", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
		})
	}
}

// The helper runs in Dir with exactly Env: no variable of the caller's.
func TestRunDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "headers.sh"), []byte("#!/bin/sh\nprintf '{\"X-Dir\":\"%s\",\"X-Home\":\"%s\"}' \"$(pwd)\" \"${HOME:-none}\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", "/leaked")
	got, err := Run(context.Background(), Spec{Command: "./headers.sh", Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got.Get("X-Dir") != dir && got.Get("X-Dir") != real {
		t.Errorf("ran in %q, want %q", got.Get("X-Dir"), dir)
	}
	if got.Get("X-Home") != "none" {
		t.Errorf("HOME = %q: the caller's environment reached the helper", got.Get("X-Home"))
	}
}

// A helper past its time is killed with everything it started, and the
// error names the key that sets the time.
func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	_, err := Run(context.Background(), Spec{
		Command: fmt.Sprintf(`sleep 600 & echo $! > %s; wait`, pidFile),
		Env:     []string{"PATH=" + os.Getenv("PATH")},
		Timeout: 300 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms (http_headers_helper_timeout_sec)") {
		t.Fatalf("error %v, want the timeout", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("Run returned after %s: the killed helper's pipes held it", time.Since(start))
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	// The grandchild was killed; it may take a moment to be reaped by
	// init (a hang guard, not a timing assertion).
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the helper's child %d outlived it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// zombie reports whether pid is a process that has exited and waits to be
// reaped (Linux; elsewhere false).
func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(data), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

// The caller's context ends the helper too, and is reported as itself,
// with its cause in words.
func TestRunContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("startup_timeout_sec elapsed"))
	_, err := Run(ctx, Spec{Command: "sleep 600", Env: []string{"PATH=" + os.Getenv("PATH")}, Timeout: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if want := `header helper "sleep 600" was stopped before it finished: startup_timeout_sec elapsed`; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestValues(t *testing.T) {
	got := Values(http.Header{"Authorization": {"Bearer abc123def456"}, "X-Key": {"k-9f8e7d6c5b4a"}})
	want := []string{"Bearer abc123def456", "abc123def456", "k-9f8e7d6c5b4a"}
	if diff := cmp.Diff(want, got, cmpSorted); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})
