package cli

import (
	"strings"

	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// painter colours what a command writes to one stream: only when that
// stream is a terminal (not TERM=dumb), and never with --no-color or a
// non-empty NO_COLOR (https://no-color.org). Colour only underlines what
// the words say: nothing is said by colour alone.
type painter struct{ on bool }

// newPainter is the painter of w, one of env's streams.
func newPainter(env Env, w any) painter {
	if env.noColor {
		return painter{}
	}
	if v, ok := env.lookup("NO_COLOR"); ok && v != "" {
		return painter{}
	}
	return painter{on: IsTerminal(w, env.lookup)}
}

// SGR colours.
const (
	green  = "32"
	red    = "31"
	yellow = "33"
	bold   = "1"
)

// paint wraps s in the colour's escape codes (s itself when off or empty).
func (p painter) paint(colour, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + colour + "m" + s + "\x1b[0m"
}

// stateColour is the colour of a server state or startup status: green
// when it works, red when it failed, yellow when it waits on the person.
func stateColour(state string) string {
	switch strings.ToLower(state) {
	case protocol.StateReady:
		return green
	case protocol.StateFailed, protocol.StatusCancelled, protocol.StateInvalid:
		return red
	case protocol.StateNeedsAuthorization, statusUntrusted:
		return yellow
	}
	return ""
}

// state paints a state word by its meaning.
func (p painter) state(state string) string {
	if c := stateColour(state); c != "" {
		return p.paint(c, state)
	}
	return state
}

// column paints the cells of one column of a table tabwriter aligned:
// the column that starts where header does in the table's first line,
// each cell by colour(cell). Painting after alignment keeps the escape
// codes out of the widths.
func (p painter) column(table, header string, colour func(cell string) string) string {
	if !p.on {
		return table
	}
	lines := strings.Split(table, "\n")
	if len(lines) == 0 {
		return table
	}
	at := strings.Index(lines[0], header)
	if at < 0 {
		return table
	}
	for i := 1; i < len(lines); i++ {
		line := lines[i]
		if len(line) <= at {
			continue
		}
		cell, _, _ := strings.Cut(line[at:], " ")
		if c := colour(cell); c != "" && cell != "" {
			lines[i] = line[:at] + p.paint(c, cell) + line[at+len(cell):]
		}
	}
	return strings.Join(lines, "\n")
}
