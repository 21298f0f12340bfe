package outbox

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// gate is a writer that takes nothing until it opens, and keeps what it
// was written, message by message.
type gate struct {
	entered chan struct{} // a write waits at the gate
	open    chan struct{}
	mu      sync.Mutex
	got     []string
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1), open: make(chan struct{})} }

func (g *gate) write(parts [][]byte) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, p := range parts {
		b.Write(p)
	}
	g.got = append(g.got, b.String())
	return nil
}

func goSpawn(f func()) bool { go f(); return true }

// TestOrder: messages are written in the order they were sent, whether
// their senders wait (Send) or not (SendLater), while a write is under way.
func TestOrder(t *testing.T) {
	g := newGate()
	o := New(g.write)
	waiting := make(chan struct{}, 4)
	o.queued = func(waits bool) {
		if waits {
			waiting <- struct{}{}
		}
	}
	first := make(chan error, 1)
	go func() { first <- o.Send([]byte("1")) }()
	<-g.entered // 1 is being written
	o.SendLater([][]byte{[]byte("2")}, nil, goSpawn)
	third := make(chan error, 1)
	go func() { third <- o.Send([]byte("3"), []byte("+")) }()
	<-waiting // 3 waits in the outbox before 4 is sent
	o.SendLater([][]byte{[]byte("4")}, nil, goSpawn)
	close(g.open)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	o.Flush(10 * time.Second)
	if diff := cmp.Diff([]string{"1", "2", "3+", "4"}, g.got); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

// TestSendLaterTriesFirst: with nobody writing, SendLater's try writes what
// it can at once; a goroutine writes only the rest.
func TestSendLaterTriesFirst(t *testing.T) {
	var got []string
	o := New(func(parts [][]byte) error {
		for _, p := range parts {
			got = append(got, "later:"+string(p))
		}
		return nil
	})
	spawned := false
	o.SendLater([][]byte{[]byte("ab"), []byte("cd")}, func(parts [][]byte) [][]byte {
		got = append(got, "now:"+string(parts[0][:1]))
		parts[0] = parts[0][1:]
		return parts
	}, func(f func()) bool { spawned = true; f(); return true })
	all := func(parts [][]byte) [][]byte { got = append(got, "now:all"); return nil }
	o.SendLater([][]byte{[]byte("x")}, all, func(func()) bool { t.Error("spawned for a message written at once"); return true })
	if diff := cmp.Diff([]string{"now:a", "later:b", "later:cd", "now:all"}, got); diff != "" || !spawned {
		t.Errorf("spawned %v; writes (-want +got):\n%s", spawned, diff)
	}
}

// TestAbandon: when no goroutine can be started for what SendLater left,
// the senders waiting behind it learn that the connection ended, and the
// outbox takes new messages again.
func TestAbandon(t *testing.T) {
	g := newGate()
	close(g.open)
	o := New(g.write)
	waiting := make(chan struct{}, 1)
	o.queued = func(bool) { waiting <- struct{}{} }
	second := make(chan error, 1)
	o.SendLater([][]byte{[]byte("a")}, func(p [][]byte) [][]byte {
		go func() { second <- o.Send([]byte("b")) }()
		<-waiting // b waits behind a
		return p  // nothing of a was written
	}, func(func()) bool { return false })
	if err := <-second; !errors.Is(err, ErrEnded) {
		t.Fatalf("the waiting sender got %v, want ErrEnded", err)
	}
	if err := o.Send([]byte("c")); err != nil {
		t.Fatalf("Send after an abandoned outbox: %v", err)
	}
	if diff := cmp.Diff([]string{"c"}, g.got); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

// TestMax: beyond Max messages waiting, SendLater waits like Send.
func TestMax(t *testing.T) {
	g := newGate()
	o := New(g.write)
	o.Max = 1
	waiting := make(chan bool, 4)
	o.queued = func(waits bool) { waiting <- waits }
	o.SendLater([][]byte{[]byte("1")}, nil, goSpawn) // being written
	<-g.entered
	o.SendLater([][]byte{[]byte("2")}, nil, goSpawn) // waits in the outbox
	if waits := <-waiting; waits {
		t.Fatal("2 was queued as a waiting sender")
	}
	returned := make(chan struct{})
	go func() { o.SendLater([][]byte{[]byte("3")}, nil, goSpawn); close(returned) }()
	if waits := <-waiting; !waits {
		t.Fatal("3 was queued without its sender waiting, past Max")
	}
	select {
	case <-returned:
		t.Fatal("SendLater returned with the outbox full")
	default:
	}
	close(g.open)
	<-returned
	o.Flush(10 * time.Second)
	if diff := cmp.Diff([]string{"1", "2", "3"}, g.got); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}
