package mcpclient

import (
	"strings"
	"sync"
	"testing"

	"github.com/mcp-sidecar/mcp-sidecar/internal/redact"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// A secret in a stderr line longer than the reader's buffer is replaced
// wherever the line is cut: in the lines passed on and in the tail the
// startup error quotes. (Each piece was scrubbed alone, and a secret
// across the cut at 16 KiB came out whole in two halves.)
func TestStderrSecretAcrossChunks(t *testing.T) {
	const secret = "sk-stderr-s3cr3t-0123456789abcdef"
	for _, at := range []int{stderrChunk - 1, stderrChunk - len(secret)/2, stderrChunk - len(secret) + 1, 2*stderrChunk - 7} {
		line := strings.Repeat("x", at) + secret + strings.Repeat("y", 100)
		var mu sync.Mutex
		var pieces []string
		_, err := Connect(testCtx(t), Options{
			Name:    "fx",
			Config:  fixture.Config("fx", fixture.Spec{ExitAtStart: true, StderrLines: []string{line}}),
			Secrets: redact.NewSecrets([]string{secret}, nil),
			Handlers: Handlers{StderrLine: func(l string) {
				mu.Lock()
				pieces = append(pieces, l)
				mu.Unlock()
			}},
		})
		if err == nil {
			t.Fatal("Connect succeeded")
		}
		mu.Lock()
		joined := strings.Join(pieces, "")
		mu.Unlock()
		if strings.Contains(joined, secret) || !strings.Contains(joined, "REDACTED") {
			t.Errorf("secret at %d: the lines passed on, joined, hold the secret or no REDACTED (%d pieces)", at, len(pieces))
		}
		if want := strings.Repeat("x", at) + "REDACTED" + strings.Repeat("y", 100); !strings.Contains(joined, want) {
			t.Errorf("secret at %d: the text around the secret changed", at)
		}
		if strings.Contains(strings.ReplaceAll(err.Error(), "\n", ""), secret) {
			t.Errorf("secret at %d: the startup error's stderr tail holds the secret", at)
		}
	}
}
