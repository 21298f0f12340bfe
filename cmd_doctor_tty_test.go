//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
)

// openPTY returns a pseudo-terminal's master and slave, with no library:
// /dev/ptmx, unlock, and the slave's number.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Skipf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Skipf("ptsname: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the slave: %v", err)
	}
	return m, s
}

// TestCmdDoctorTerminal runs doctor with stderr on a real terminal: the
// progress block is redrawn in place; with TERM=dumb it is plain lines.
func TestCmdDoctorTerminal(t *testing.T) {
	isolate(t)
	cfg := writeConfig(t,
		server{name: "alpha", spec: fixture.Spec{ToolCount: 2}},
		server{name: "beta", spec: fixture.Spec{ExitAtStart: true}},
	)
	for _, tc := range []struct {
		term string
		live bool
	}{
		{"xterm-256color", true},
		{"dumb", false},
	} {
		t.Run(tc.term, func(t *testing.T) {
			t.Setenv("TERM", tc.term)
			master, slave := openPTY(t)
			defer master.Close()
			screen := make(chan string)
			go func() {
				var b bytes.Buffer
				io.Copy(&b, master) // ends with EIO once the slave is closed
				screen <- b.String()
			}()
			var stdout bytes.Buffer
			code := run([]string{"doctor", "--config", cfg}, nil, &stdout, slave)
			slave.Close()
			out := <-screen
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%q", code, stdout.String(), out)
			}
			redrawn := strings.Contains(out, "\x1b[2A") && strings.Contains(out, "\r\x1b[2K")
			if redrawn != tc.live {
				t.Errorf("TERM=%s: redrawn in place = %v, want %v:\n%q", tc.term, redrawn, tc.live, out)
			}
			for _, want := range []string{"alpha  ready", "beta   FAILED"} {
				if !strings.Contains(out, want) {
					t.Errorf("terminal lacks %q:\n%q", want, out)
				}
			}
		})
	}
}
