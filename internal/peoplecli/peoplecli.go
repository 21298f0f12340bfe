// Package peoplecli holds the sidecar's commands for people: doctor, tools,
// call and probe-launcher. Each drives an in-process sidecar through the
// host protocol (sidecar.Serve over pipes, spoken to by hostclient), so what
// a person sees is what a harness gets: the same config loading, startup,
// catalog, calls and sandbox metadata, with no second implementation.
package peoplecli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// Env is what a command may use of the world. main fills it from the
// process; tests fill it with buffers and their own environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv is the environment: the sidecar's (children's allowlist,
	// env_vars, tokens), config expansion, CODEX_HOME and the cache dir.
	LookupEnv config.Lookup
	// Home and Cwd locate the default config files and are the fallback
	// cwd of stdio servers without one.
	Home, Cwd string
	// Version is the sidecar's version, reported as its serverInfo.
	Version string
}

func (e Env) lookup(key string) (string, bool) {
	if e.LookupEnv == nil {
		return "", false
	}
	return e.LookupEnv(key)
}

// Exit statuses shared by the commands.
const (
	exitOK      = 0
	exitFailure = 1 // the thing checked is broken: bad config, failed required server, failed call
	exitUsage   = 2 // the command line is wrong
)

func newFlagSet(name, doc string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, doc)
		fmt.Fprintln(out, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags wherever they stand among the positional
// arguments ("call srv tool --sandbox-state f.json" reads as people write
// it); "--" ends the flags. It returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag or after "--"; tell them apart
		// by what was consumed.
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	*l = append(*l, v)
	return nil
}

// lockedWriter serialises writes from the sidecar's logger, the host
// client's notification loop and the command itself.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// IsTerminal reports whether w is a character device that is not
// /dev/null, and TERM is not "dumb": where rewriting lines in place shows a
// live display rather than garbage.
func IsTerminal(w io.Writer, lookup config.Lookup) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	if lookup != nil {
		if t, _ := lookup("TERM"); t == "dumb" {
			return false
		}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too.
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
		return false
	}
	return true
}
