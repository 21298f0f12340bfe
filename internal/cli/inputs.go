package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// The inputs of VS Code files (${input:ID}) are asked of the person on
// the terminal, as VS Code asks them in its window: the question on
// stderr, the answer from stdin, hidden for a password, the file's
// default for an empty answer. Only where both are terminals: a command
// in a pipe or a script has no one to ask, and its servers that need an
// input say so (docs/protocol.md, "VS Code inputs").

// terminalInput answers mcp/input on the terminal, one question at a
// time; nil when stdin or stderr is not a terminal.
func terminalInput(env Env) func(ctx context.Context, p protocol.InputParams) (protocol.InputResult, error) {
	in, ok := env.Stdin.(*os.File)
	if !ok || !IsTerminal(env.Stdin, env.lookup) || !IsTerminal(env.Stderr, env.lookup) {
		return nil
	}
	var mu sync.Mutex
	return func(ctx context.Context, p protocol.InputParams) (protocol.InputResult, error) {
		mu.Lock()
		defer mu.Unlock()
		answer, err := readAnswer(ctx, in, env.Stderr, inputQuestion(p), p.Password)
		switch {
		case errors.Is(err, io.EOF):
			fmt.Fprintln(env.Stderr, "(cancelled)")
			return protocol.InputResult{Cancelled: true}, nil
		case err != nil:
			return protocol.InputResult{}, err
		}
		if answer == "" && p.Default != nil {
			answer = *p.Default
		}
		return protocol.InputResult{Value: &answer}, nil
	}
}

// inputQuestion is the question of p: what the file says, which input
// of which file, for which server, and how the answer is read.
func inputQuestion(p protocol.InputParams) string {
	var b strings.Builder
	what := p.Description
	if what == "" {
		what = "Value"
	}
	fmt.Fprintf(&b, "%s\n  (input %q of %s, for server %q", what, p.ID, p.Source, p.Server)
	if p.Password {
		b.WriteString("; typing is hidden")
	}
	if p.Password {
		b.WriteString(", Ctrl-C or Ctrl-D cancels)\n")
	} else {
		b.WriteString("; Ctrl-D cancels)\n")
	}
	if p.Default != nil && !p.Password {
		fmt.Fprintf(&b, "[%s] ", *p.Default)
	} else if p.Default != nil {
		b.WriteString("[Enter: the file's default] ")
	}
	b.WriteString("> ")
	return b.String()
}

// readAnswer shows question on w and reads one line from the terminal
// f: echoed as typed, or for a password hidden, the terminal in raw mode
// from before the question is shown (so that nothing typed ahead is
// echoed) until the line ends. It reads byte by byte, so that nothing
// after the line is taken from whoever reads the terminal next. io.EOF is
// a cancelled answer (Ctrl-D; Ctrl-C for a password). ctx ending gives
// up, and leaves the terminal as it was.
func readAnswer(ctx context.Context, f *os.File, w io.Writer, question string, hidden bool) (string, error) {
	fd := int(f.Fd())
	restore := func() {}
	if hidden {
		state, err := term.MakeRaw(fd)
		if err != nil {
			return "", err
		}
		restore = func() { term.Restore(fd, state) }
		defer restore()
		// Raw mode writes no carriage return of its own.
		question = strings.ReplaceAll(question, "\n", "\r\n")
	}
	io.WriteString(w, question)
	type result struct {
		line string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// The read ends with the line, or with the terminal (the process
		// exits after a cancelled command): nothing else can stop it.
		var r result
		if hidden {
			r.line, r.err = readHidden(f)
		} else {
			r.line, r.err = readLine(f)
		}
		done <- r
	}()
	select {
	case r := <-done:
		if hidden {
			io.WriteString(w, "\r\n")
		}
		return r.line, r.err
	case <-ctx.Done():
		restore()
		return "", ctx.Err()
	}
}

// readHidden reads a line from a terminal in raw mode, echoing nothing:
// Enter ends it, Backspace and Ctrl-U edit it, Ctrl-D on an empty line
// and Ctrl-C cancel it (io.EOF).
func readHidden(f io.Reader) (string, error) {
	var b []byte
	var c [1]byte
	for {
		n, err := f.Read(c[:])
		if err != nil {
			return "", err
		}
		if n == 0 {
			continue
		}
		switch c[0] {
		case '\r', '\n':
			return string(b), nil
		case 3: // Ctrl-C
			return "", io.EOF
		case 4: // Ctrl-D
			if len(b) == 0 {
				return "", io.EOF
			}
		case 127, 8: // Backspace
			if len(b) > 0 {
				_, size := utf8.DecodeLastRune(b)
				b = b[:len(b)-size]
			}
		case 21: // Ctrl-U
			b = b[:0]
		default:
			b = append(b, c[0])
		}
	}
}

// readLine reads up to a newline, one byte at a time; io.EOF when the
// input ends before any.
func readLine(f io.Reader) (string, error) {
	var b []byte
	var c [1]byte
	for {
		n, err := f.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				return strings.TrimSuffix(string(b), "\r"), nil
			}
			b = append(b, c[0])
			continue
		}
		if err != nil {
			if len(b) > 0 && errors.Is(err, io.EOF) {
				return string(b), nil
			}
			return "", err
		}
	}
}

// noTerminalForInputs makes the servers of l that use an input invalid
// when there is no terminal to ask on, saying so, as the sidecar the
// command starts does (it is not offered mcp/input either).
func noTerminalForInputs(env Env, l *loaded) {
	if terminalInput(env) != nil {
		return
	}
	l.cfg.NoOneToAsk(func(in config.Input) string {
		return fmt.Sprintf("uses %s, which is asked on a terminal: run the command with stdin and stderr on one", in.Describe())
	})
	l.servers = l.cfg.Valid()
}
