package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadSettings(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name, file string
		want       *Settings
		err        string // a part of the error; "" for none
	}{
		{"missing file", "", &Settings{}, ""},
		{"empty file", " ", &Settings{}, ""},
		{"deferred", "[mcp]\ndeferred = true\n", &Settings{MCP: MCPSettings{Deferred: &yes}}, ""},
		{"deferred off", "[mcp]\ndeferred = false\n", &Settings{MCP: MCPSettings{Deferred: &no}}, ""},
		{"empty table", "[mcp]\n", &Settings{}, ""},
		{"misspelt key", "[mcp]\ndefered = true\n", nil, `key "mcp.defered": unknown key; did you mean "deferred"?`},
		{"unknown table", "[gateway]\ndeferred = true\n", nil, `key "gateway": unknown key`},
		{"key outside its table", "deferred = true\n", nil, `key "deferred": unknown key`},
		{"not a table", "mcp = true\n", nil, `key "mcp": expected a table`},
		{"wrong type", "[mcp]\ndeferred = \"yes\"\n", nil, `key "mcp.deferred": expected true or false`},
		{"not TOML", "[mcp\n", nil, "invalid TOML at line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), SettingsFileName)
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadSettings(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("ReadSettings: %v, want an error of %s with %q", err, path, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadSettingsRefusedWhenOthersMayWrite: the file decides what every
// client of the user's gateway gets, so, as the trust record, it is read
// only when no one else may write it.
func TestReadSettingsRefusedWhenOthersMayWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), SettingsFileName)
	if err := os.WriteFile(path, []byte("[mcp]\ndeferred = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSettings(path); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("ReadSettings: %v, want it refused", err)
	}
}

func TestDefaultSettingsFile(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/mcp-sidecar/config.toml", true},
		{map[string]string{"HOME": "/h"}, "/h/.config/mcp-sidecar/config.toml", true},
		{map[string]string{}, "", false},
	} {
		got, ok := DefaultSettingsFile(MapLookup(tc.env))
		if got != filepath.FromSlash(tc.want) || ok != tc.ok {
			t.Errorf("DefaultSettingsFile(%v) = %q, %v; want %q, %v", tc.env, got, ok, tc.want, tc.ok)
		}
	}
}
