package sidecar

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type abortRecord struct {
	name string
	got  *[]string
}

func (a abortRecord) abort(cause error) {
	if errors.Is(cause, errToolTimeout) {
		*a.got = append(*a.got, a.name)
	}
}

// TestCallDeadlines: calls end in the order they are due, a call that ended
// is never timed out, and the one timer is set again only for a call due
// earlier than the one it waits for.
func TestCallDeadlines(t *testing.T) {
	var d callDeadlines
	var got []string
	now := time.Now()
	at := func(h int) time.Time { return now.Add(time.Duration(h) * time.Hour) } // never reached by the real timer
	a := d.add(abortRecord{"a", &got}, at(2))
	if !d.armed.Equal(at(2)) {
		t.Fatalf("armed for %v, want the first call's deadline", d.armed)
	}
	d.add(abortRecord{"b", &got}, at(3))
	if !d.armed.Equal(at(2)) {
		t.Errorf("a later call set the timer again (%v)", d.armed)
	}
	d.add(abortRecord{"c", &got}, at(1))
	if !d.armed.Equal(at(1)) {
		t.Errorf("an earlier call did not set the timer for itself (%v)", d.armed)
	}
	e := d.add(abortRecord{"ended", &got}, at(1))
	d.remove(e)
	d.fireAt(at(2))
	if diff := cmp.Diff([]string{"c", "a"}, got); diff != "" {
		t.Errorf("timed out (-want +got):\n%s", diff)
	}
	if !d.armed.Equal(at(3)) {
		t.Errorf("armed for %v after firing, want b's deadline", d.armed)
	}
	d.remove(a) // ended by then: nothing to do
	d.fireAt(at(4))
	if diff := cmp.Diff([]string{"c", "a", "b"}, got); diff != "" {
		t.Errorf("timed out (-want +got):\n%s", diff)
	}
	if !d.armed.IsZero() || d.due.Len() != 0 {
		t.Errorf("armed %v with %d calls left, want nothing", d.armed, d.due.Len())
	}
	d.timer.Stop()
}
