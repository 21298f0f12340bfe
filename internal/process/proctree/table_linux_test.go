package proctree

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHasEnv reads the environments of real processes: an entry matches
// only whole, wherever it is among variables of any length.
func TestHasEnv(t *testing.T) {
	const entry = "MCP_SIDECAR_SERVER=0123456789abcdef"
	long := "LONG=" + strings.Repeat("x", 100<<10) // past any one read
	tests := []struct {
		name string
		env  []string
		want bool
	}{
		{"alone", []string{entry}, true},
		{"among others", []string{"A=1", entry, "B=2"}, true},
		{"after a long variable", []string{long, entry}, true},
		{"before a long variable", []string{entry, long}, true},
		{"after a variable that fills a read", []string{"P=" + strings.Repeat("y", 4096-3), entry}, true},
		{"a prefix of it", []string{entry[:len(entry)-1]}, false},
		{"it with more", []string{entry + "0"}, false},
		{"inside a longer variable", []string{"X" + entry}, false},
		{"the name with another value", []string{"MCP_SIDECAR_SERVER=fedcba9876543210"}, false},
		{"a long variable ending in it", []string{strings.Repeat("z", 8<<10) + entry}, false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The shell says it runs once exec has set up its environment:
			// Start returns earlier, while the kernel may still be building
			// it (and /proc then shows none).
			cmd := exec.Command("sh", "-c", "echo running; read wait")
			cmd.Env = append([]string{}, tt.env...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "running\n" {
				t.Fatalf("the shell said %q, %v", line, err)
			}
			if got := HasEnv(cmd.Process.Pid, entry); got != tt.want {
				t.Errorf("HasEnv = %v, want %v", got, tt.want)
			}
		})
	}
	if HasEnv(os.Getpid(), entry) {
		t.Errorf("the test process has %s", entry)
	}
	if HasEnv(1<<30, entry) {
		t.Errorf("a pid that does not exist has %s", entry)
	}
}
