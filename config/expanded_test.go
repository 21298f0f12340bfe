package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What ${VAR} and ${env:VAR} put into a server's definition is recorded in
// Expanded, wherever it went (a URL's path, a header, an argument), for
// the scrubber; the values of the variables every child inherits, the
// defaults written in the file and the path variables are not.
func TestExpandedValues(t *testing.T) {
	dir := t.TempDir()
	env := MapLookup(map[string]string{
		"PATH_TOKEN": "path-s3cr3t", "HDR": "header-s3cr3t", "ARG": "arg-s3cr3t", "HOME": "/home/u", "EMPTY": "",
	})
	for _, tt := range []struct{ name, rel, content string }{
		{"claude", "claude/.mcp.json", `{"mcpServers": {
			"h": {"type": "http", "url": "https://mcp.example.com/${PATH_TOKEN}/mcp?x=${DEF:-written-default}", "headers": {"X-Key": "k ${HDR}"}},
			"s": {"command": "${HOME}/bin/x", "args": ["--key", "${ARG}", "${EMPTY:-d}"]}}}`},
		{"vscode", "p/.vscode/mcp.json", `{"servers": {
			"h": {"type": "http", "url": "https://mcp.example.com/${env:PATH_TOKEN}/mcp", "headers": {"X-Key": "k ${env:HDR}"}},
			"s": {"command": "${userHome}/bin/x", "args": ["--key", "${env:ARG}"]}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := Load(FileSources([]string{writeFile(t, dir, tt.rel, tt.content)}), nil, env)
			got := map[string][]string{}
			for name, c := range l.Servers {
				if !c.Valid() {
					t.Fatalf("server %s: %v", name, c.Problems)
				}
				got[name] = c.Expanded
			}
			want := map[string][]string{"h": {"header-s3cr3t", "path-s3cr3t"}, "s": {"arg-s3cr3t"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Expanded (-want +got):\n%s", diff)
			}
		})
	}
}
