package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// progress shows servers starting. add and update may come in any order
// (notifications can overtake session/open's result); finish ends the
// display before the command prints anything else.
type progress interface {
	add(name, state string)
	update(name string, r *serverRun)
	finish()
}

// progressLine is one server's line, without decoration.
func progressLine(name string, width int, state string, r *serverRun, now time.Time) string {
	pad := fmt.Sprintf("%-*s", width, name)
	switch state {
	case protocol.StatusStarting:
		if r != nil && !r.began.IsZero() {
			return fmt.Sprintf("%s  starting  %s", pad, formatDuration(now.Sub(r.began)))
		}
		return pad + "  starting"
	case protocol.StatusReady:
		s := fmt.Sprintf("%s  ready     %s", pad, formatDuration(r.elapsed()))
		if r.tools != nil {
			s += ", " + plural(int64(*r.tools), "tool")
		}
		return s
	case protocol.StatusFailed:
		// The server's own last words say more than the sidecar's summary.
		why := lastStderrLine(r.err, "")
		if why == "" {
			why = errorSummary(r.err)
		}
		return fmt.Sprintf("%s  FAILED    %s: %s", pad, formatDuration(r.elapsed()), why)
	case protocol.StatusCancelled:
		return pad + "  cancelled"
	case protocol.StateDormant:
		return pad + "  dormant   (cached catalog, not started)"
	case protocol.StateDisabled:
		return pad + "  disabled"
	}
	return pad + "  " + state
}

// plainProgress writes one line per event: for logs and pipes.
type plainProgress struct {
	w     io.Writer
	mu    sync.Mutex
	width int
	seen  map[string]bool
}

func newPlainProgress(w io.Writer, names []string) *plainProgress {
	return &plainProgress{w: w, width: nameWidth(names), seen: map[string]bool{}}
}

func (p *plainProgress) add(name, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[name] {
		return
	}
	p.seen[name] = true
	// Starting servers announce themselves through update.
	if state != protocol.StateStarting {
		fmt.Fprintln(p.w, progressLine(name, p.width, state, nil, time.Now()))
	}
}

func (p *plainProgress) update(name string, r *serverRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[name] = true
	state := r.status
	if state == protocol.StatusStarting {
		r = nil // a line per event: no elapsed time to show yet
	}
	fmt.Fprintln(p.w, progressLine(name, p.width, state, r, time.Now()))
}

func (p *plainProgress) finish() {}

// ttyProgress keeps one line per server and redraws the block in place
// (cursor up, clear line) on each event and, while something is starting,
// a few times a second so that elapsed times move. Lines are cut to the
// terminal width so that none wraps and breaks the cursor arithmetic.
type ttyProgress struct {
	w       io.Writer
	columns int
	paint   painter

	mu     sync.Mutex
	width  int
	order  []string
	lines  map[string]*serverRun
	states map[string]string
	drawn  int
	done   bool

	stop chan struct{}
	wg   sync.WaitGroup
}

func newTTYProgress(w io.Writer, names []string, columns int, paint painter) *ttyProgress {
	p := &ttyProgress{
		w:       w,
		columns: columns,
		paint:   paint,
		width:   nameWidth(names),
		lines:   map[string]*serverRun{},
		states:  map[string]string{},
		stop:    make(chan struct{}),
	}
	p.wg.Add(1)
	go p.tick()
	return p
}

func (p *ttyProgress) tick() {
	defer p.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw()
			p.mu.Unlock()
		}
	}
}

func (p *ttyProgress) add(name, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.states[name]; ok {
		return
	}
	p.order = append(p.order, name)
	p.states[name] = state
	p.redraw()
}

func (p *ttyProgress) update(name string, r *serverRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.states[name]; !ok {
		p.order = append(p.order, name)
	}
	p.states[name] = r.status
	p.lines[name] = r
	p.redraw()
}

// redraw rewrites the block; mu is held.
func (p *ttyProgress) redraw() {
	if p.done || len(p.order) == 0 {
		return
	}
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	now := time.Now()
	for _, name := range p.order {
		line := "  " + progressLine(name, p.width, p.states[name], p.lines[name], now)
		if p.columns > 1 {
			line = cut(line, p.columns-1)
		}
		line = p.paintStatus(line)
		b.WriteString("\r\x1b[2K")
		b.WriteString(line)
		b.WriteString("\n")
	}
	p.drawn = len(p.order)
	io.WriteString(p.w, b.String())
}

// paintStatus paints the status word of a line of the block (after its
// cut, so that escape codes do not count as columns).
func (p *ttyProgress) paintStatus(line string) string {
	at := 2 + p.width + 2 // "  " + name + "  "
	if len(line) <= at {
		return line
	}
	word, _, _ := strings.Cut(line[at:], " ")
	return line[:at] + p.paint.state(word) + line[at+len(word):]
}

func (p *ttyProgress) finish() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.redraw()
	if p.drawn > 0 {
		io.WriteString(p.w, "\n") // set the block apart from what follows
	}
	p.done = true
	p.mu.Unlock()
	close(p.stop)
	p.wg.Wait()
}

func nameWidth(names []string) int {
	w := 0
	for _, n := range names {
		w = max(w, len(n))
	}
	return w
}

// formatDuration is milliseconds below a second, else seconds with one
// decimal: precise enough to compare servers, short enough for a table.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// newProgress picks the live display for a terminal and plain lines
// otherwise.
func newProgress(env Env, w io.Writer, names []string) progress {
	if !IsTerminal(env.Stderr, env.lookup) {
		return newPlainProgress(w, names)
	}
	columns := 80
	if c, ok := env.lookup("COLUMNS"); ok {
		if n, err := strconv.Atoi(c); err == nil && n > 20 {
			columns = n
		}
	}
	return newTTYProgress(w, names, columns, newPainter(env, env.Stderr))
}

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// cut shortens s to at most n runes.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
