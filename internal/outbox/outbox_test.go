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
// their senders wait (Send), hand them over (Post) or not (SendLater),
// while a write is under way.
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
	if queued, err := o.Post([][]byte{[]byte("5")}, nil); !queued || err != nil {
		t.Fatalf("Post behind a write: queued %v, err %v", queued, err)
	}
	close(g.open)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	o.Flush(10 * time.Second)
	if diff := cmp.Diff([]string{"1", "2", "3+", "4", "5"}, g.got); diff != "" {
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
	if c, n := o.Pending(); c != 0 || n != 0 {
		t.Errorf("pending %d messages of %d bytes after abandoning, want none", c, n)
	}
}

// stepper is a writer that writes one message per step: each write
// announces itself on entered and waits for a step.
type stepper struct {
	entered chan string
	step    chan struct{}
}

func newStepper() *stepper {
	return &stepper{entered: make(chan string), step: make(chan struct{})}
}

func (s *stepper) write(parts [][]byte) error {
	var b strings.Builder
	for _, p := range parts {
		b.Write(p)
	}
	s.entered <- b.String()
	<-s.step
	return nil
}

// TestPost: Post hands a message over without waiting for the messages
// ahead of it; a queued message is the caller's keep of it, so that the
// caller may reuse its buffer; with nobody writing, the caller writes.
func TestPost(t *testing.T) {
	s := newStepper()
	o := New(s.write)
	firstDone := make(chan bool, 1)
	go func() {
		queued, err := o.Post([][]byte{[]byte("1")}, func([][]byte) [][]byte { t.Error("kept a message written at once"); return nil })
		if err != nil {
			t.Error(err)
		}
		firstDone <- queued
	}()
	if got := <-s.entered; got != "1" {
		t.Fatalf("writing %q", got)
	}
	buf := []byte("2")
	queued, err := o.Post([][]byte{buf}, func(p [][]byte) [][]byte { return [][]byte{[]byte(string(p[0]) + "'")} })
	if err != nil || !queued {
		t.Fatalf("Post behind a write: queued %v, err %v", queued, err)
	}
	buf[0] = 'x' // the caller reuses its buffer
	if c, n := o.Pending(); c != 1 || n != 2 {
		t.Errorf("pending %d messages of %d bytes, want the copy, 1 of 2", c, n)
	}
	s.step <- struct{}{}
	if got := <-s.entered; got != "2'" {
		t.Errorf("writing %q, want the kept copy 2'", got)
	}
	s.step <- struct{}{}
	if queued := <-firstDone; queued {
		t.Error("the first message was queued with nobody writing")
	}
	if c, n := o.Pending(); c != 0 || n != 0 {
		t.Errorf("pending %d messages of %d bytes after the writes, want none", c, n)
	}
}

// TestRoom: past MaxCount messages or MaxBytes bytes waiting behind the
// one being written, the outbox is full until it is back at half its
// limit; every kind of sender counts.
func TestRoom(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		s := newStepper()
		o := New(s.write)
		o.MaxCount = 4
		waiting := make(chan struct{}, 1)
		o.queued = func(waits bool) {
			if waits {
				waiting <- struct{}{}
			}
		}
		go o.Post([][]byte{[]byte("1")}, nil)
		<-s.entered // 1 is being written: it does not wait
		o.SendLater([][]byte{[]byte("2")}, nil, goSpawn)
		o.Post([][]byte{[]byte("3")}, nil)
		o.Post([][]byte{[]byte("4")}, nil)
		go o.Send([]byte("5"))
		<-waiting
		if o.Room() != nil {
			t.Fatal("full at 4 messages of 4")
		}
		o.Post([][]byte{[]byte("6")}, nil)
		full := o.Room()
		if full == nil {
			t.Fatal("not full at 5 messages of 4")
		}
		// Written one by one: full with 4 and 3 waiting, not with 2.
		for _, next := range []string{"2", "3"} {
			s.step <- struct{}{}
			if got := <-s.entered; got != next {
				t.Fatalf("writing %q, want %q", got, next)
			}
			if o.Room() == nil {
				c, _ := o.Pending()
				t.Fatalf("not full with %d waiting, limit 4", c)
			}
		}
		s.step <- struct{}{}
		if got := <-s.entered; got != "4" {
			t.Fatalf("writing %q, want 4", got)
		}
		select {
		case <-full:
		default:
			t.Fatal("still full at half the limit")
		}
		if o.Room() != nil {
			t.Fatal("Room reports full at half the limit")
		}
		for range 2 {
			s.step <- struct{}{}
			<-s.entered
		}
		s.step <- struct{}{}
		if !o.Flush(time.Minute) {
			t.Fatal("not flushed")
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s := newStepper()
		o := New(s.write)
		o.MaxBytes = 10
		go o.Post([][]byte{[]byte("0123"), []byte("4567")}, nil)
		<-s.entered
		o.Post([][]byte{[]byte("89a")}, nil)
		if o.Room() != nil {
			t.Fatal("full at 3 bytes of 10")
		}
		o.Post([][]byte{[]byte("bcde"), []byte("fghi")}, nil)
		full := o.Room()
		if full == nil {
			t.Fatal("not full at 11 bytes of 10")
		}
		s.step <- struct{}{}
		<-s.entered // 8 bytes wait
		if o.Room() == nil {
			t.Fatal("not full at 8 bytes, limit 10")
		}
		s.step <- struct{}{}
		<-s.entered // nothing waits
		<-full
		s.step <- struct{}{}
		if !o.Flush(time.Minute) {
			t.Fatal("not flushed")
		}
		if c, n := o.Pending(); c != 0 || n != 0 {
			t.Errorf("pending %d messages of %d bytes at the end, want none", c, n)
		}
	})
}

// TestIdle: Idle is nil with nobody writing, else closed once the writer
// has written what waits and stopped.
func TestIdle(t *testing.T) {
	s := newStepper()
	o := New(s.write)
	if o.Idle() != nil {
		t.Fatal("idle channel with nobody writing")
	}
	go o.Post([][]byte{[]byte("1")}, nil)
	<-s.entered
	idle := o.Idle()
	if idle == nil {
		t.Fatal("no idle channel while writing")
	}
	o.Post([][]byte{[]byte("2")}, nil)
	s.step <- struct{}{}
	<-s.entered
	select {
	case <-idle:
		t.Fatal("idle with 2 being written")
	default:
	}
	s.step <- struct{}{}
	<-idle
	if o.Idle() != nil {
		t.Fatal("idle channel after the writer stopped")
	}
}
