//go:build !linux

package reaper

// Only Linux has child subreapers: elsewhere orphans go to init (launchd),
// and what ends them is their server's teardown while their parent lives.
const subreaperSupported = false

func becomeSubreaper() error { return nil }
func (r *Reaper) reapLoop()  { close(r.loopDone) }
func reap(int)               {}
