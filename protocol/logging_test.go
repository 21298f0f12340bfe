package protocol

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
)

// lockedBuffer is a bytes.Buffer for several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPeerBytesInTheLog: what the peer sent reaches the log cut short,
// and the records that carry it are rate-limited per message, whatever
// the peer sends: malformed $/cancelRequest params, a response whose id
// was never issued, a response without an id, a malformed message with a
// long id, each 64 KiB and 50 times. (The cancel params went to the log
// whole: 64 MiB in, 64 MiB on stderr.)
func TestPeerBytesInTheLog(t *testing.T) {
	var out lockedBuffer
	stopped := time.Unix(1000, 0)
	logger := slog.New(peerlog.NewHandler(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}),
		peerlog.HandlerOptions{Now: func() time.Time { return stopped }}))
	big := strings.Repeat("x", 64<<10)
	var in strings.Builder
	const each = 50
	for range each {
		in.WriteString(frameOf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":"` + big + `"}`))
		in.WriteString(frameOf(`{"jsonrpc":"2.0","id":"` + big + `","result":{}}`))
		in.WriteString(frameOf(`{"jsonrpc":"2.0","error":{"code":1,"message":"` + big + `"}}`))
		in.WriteString(frameOf(`{"jsonrpc":"2.0","id":"` + big + `"}`))
	}
	runConn(t, strings.NewReader(in.String()), ConnOptions{Logger: logger})

	counts := make(map[string]int)
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if len(line) > 2*peerlog.MaxBytes+256 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
		_, rest, _ := strings.Cut(line, "msg=")
		msg := rest
		if strings.HasPrefix(rest, `"`) {
			msg = rest[1 : 1+strings.Index(rest[1:], `"`)]
		}
		counts[msg]++
	}
	want := map[string]int{
		"malformed $/cancelRequest":                   peerlog.DefaultBurst,
		"dropping response whose id was never issued": peerlog.DefaultBurst,
		"dropping response without an id":             peerlog.DefaultBurst,
		"answering malformed message":                 peerlog.DefaultBurst,
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("log records by message, %d of each sent (-want +got):\n%s", each, diff)
	}
}
