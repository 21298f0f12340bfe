package mcpclient

import (
	"strings"
	"testing"
)

func TestWinLookPath(t *testing.T) {
	files := map[string]bool{
		`C:\Program Files\nodejs\npx.cmd`:  true,
		`C:\Program Files\nodejs\node.exe`: true,
		`C:\tools\uvx.exe`:                 true,
		`C:\tools\server.py`:               true,
		`C:\work\proj\bin\run.bat`:         true,
		`D:\other\node.exe`:                true,
	}
	isFile := func(p string) bool { return files[p] }
	const path = `relative\bin;C:\Program Files\nodejs;"C:\tools";D:\other`
	for _, tc := range []struct {
		name, command, pathExt, dir string
		want, err                   string
	}{
		{"npx finds npx.cmd", "npx", "", "", `C:\Program Files\nodejs\npx.cmd`, ""},
		{"PATH order", "node", ".EXE", "", `C:\Program Files\nodejs\node.exe`, ""},
		{"quoted entry, PATHEXT in capitals", "uvx", ".EXE", "", `C:\tools\uvx.exe`, ""},
		{"an extension given is tried as is", "server.py", "", "", `C:\tools\server.py`, ""},
		{"PATHEXT limits the extensions", "npx", ".EXE;.COM", "", "", "not found in PATH"},
		{"relative to the server's cwd", `bin\run`, "", `C:\work\proj`, `C:\work\proj\bin\run.bat`, ""},
		{"absolute", `D:\other\node`, "", `C:\work`, `D:\other\node.exe`, ""},
		{"relative PATH entries are not searched", "run", "", "", "", "not found in PATH"},
		{"empty", "", "", "", "", "no command configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := winLookPath(tc.command, path, tc.pathExt, tc.dir, isFile)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("winLookPath(%q) = %q, %v; want error %q", tc.command, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("winLookPath(%q) = %q, %v; want %q", tc.command, got, err, tc.want)
			}
		})
	}
}

func TestWinEnvValueIgnoresCase(t *testing.T) {
	env := []string{"Path=C:\\a", "PATHEXT=.EXE"}
	if v, ok := winEnvValue(env, "PATH"); !ok || v != `C:\a` {
		t.Errorf("PATH = %q, %v", v, ok)
	}
}
