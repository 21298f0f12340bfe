package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// TestBinaryCompletion: 'completion bash|zsh|fish' prints a script that,
// loaded in that shell, completes commands, flags, subcommands, the
// server names of the config the line names, and a file after --config.
// The scripts ask the binary (__complete), which is checked directly too.
// Each shell's part is skipped where the shell is not installed.
func TestBinaryCompletion(t *testing.T) {
	isolate(t)
	bin := binary(t)
	cfg := writeConfig(t,
		server{name: "github", spec: fixture.Spec{ToolCount: 1}},
		server{name: "gitlab", spec: fixture.Spec{ToolCount: 1}},
	)
	pidFile := filepath.Join(t.TempDir(), "pid")
	started := writeConfig(t, server{name: "never", spec: fixture.Spec{PIDFile: pidFile}})
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"do"}, []string{"doctor"}},
		{[]string{"l"}, []string{"list", "login", "logout"}},
		{[]string{"tools", "--ser"}, []string{"--server"}},
		{[]string{"tools", "--no"}, []string{"--no-color"}},
		{[]string{"call", "--config", cfg, "git"}, []string{"github", "gitlab"}},
		{[]string{"tools", "--config", cfg, "--server", ""}, []string{"github", "gitlab"}},
		{[]string{"login", "--config=" + cfg, "gith"}, []string{"github"}},
		{[]string{"call", "--config", cfg, "github", ""}, nil},
		{[]string{"resources", ""}, []string{"list", "templates", "read"}},
		{[]string{"completion", "z"}, []string{"zsh"}},
		{[]string{"help", "pro"}, []string{"prompts", "probe-launcher"}},
		{[]string{"doctor", "--config", ""}, []string{":files"}},
		{[]string{"call", "--config", started, ""}, []string{"never"}},
	} {
		out, err := exec.Command(bin, append([]string{"__complete"}, tc.words...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Fields(string(out))
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("__complete %q (-want +got):\n%s", tc.words, diff)
		}
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Error("completing a server name started the server")
	}
	if r := runBin(t, nil, "completion", "ksh"); r.code != 2 || !strings.Contains(r.stderr, `no completion for "ksh": bash, zsh or fish`) {
		t.Errorf("completion ksh: %s", r)
	}

	path := "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, tc := range []struct {
		shell  string
		script string // loads the completion, then completes, printing one candidate a line
	}{
		{"bash", `source <(mcp-sidecar completion bash)
COMP_WORDS=(mcp-sidecar call --config "$CFG" gi); COMP_CWORD=4; _mcp_sidecar; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(mcp-sidecar doc); COMP_CWORD=1; _mcp_sidecar; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(mcp-sidecar tools --config "${CFG%.toml}"); COMP_CWORD=3; _mcp_sidecar; printf '%s\n' "${COMPREPLY[@]}"`},
		{"zsh", `compdef() { :; }; compadd() { shift; print -l -- "$@"; }; _files() { print FILES; }
source <(mcp-sidecar completion zsh)
words=(mcp-sidecar call --config "$CFG" gi); CURRENT=5; _mcp-sidecar
words=(mcp-sidecar doc); CURRENT=2; _mcp-sidecar
words=(mcp-sidecar tools --config ""); CURRENT=4; _mcp-sidecar`},
		{"fish", `mcp-sidecar completion fish | source
complete -C "mcp-sidecar call --config $CFG gi"
complete -C "mcp-sidecar doc"
complete -C "mcp-sidecar tools --config "(string replace .toml '' $CFG)`},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			if _, err := exec.LookPath(tc.shell); err != nil {
				t.Skipf("%s is not installed", tc.shell)
			}
			cmd := exec.Command(tc.shell, "-c", tc.script)
			cmd.Env = append(os.Environ(), path, "CFG="+cfg)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			file := cfg
			if tc.shell == "zsh" {
				file = "FILES" // _files, stubbed
			}
			want := []string{"github", "gitlab", "doctor", file}
			if diff := cmp.Diff(want, strings.Fields(string(out))); diff != "" {
				t.Errorf("completions (-want +got):\n%s", diff)
			}
		})
	}
}
