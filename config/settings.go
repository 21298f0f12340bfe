package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/BurntSushi/toml"

	"github.com/mcp-sidecar/mcp-sidecar/internal/safefile"
)

// The server config files are other tools' (Codex, Claude Code, Cursor, VS
// Code), so how mcp-sidecar itself runs is set in a file of its own, the
// settings file, $XDG_CONFIG_HOME/mcp-sidecar/config.toml, next to the
// trust record. A command's flag wins over the file's key. The file holds
// one table per command that reads it:
//
//	[mcp]
//	deferred = true   # mcp-sidecar mcp --deferred

// SettingsFileName is the settings file's name in the sidecar's config
// folder.
const SettingsFileName = "config.toml"

const maxSettings = 1 << 20

// Settings are the settings file's contents; a key left out is nil.
type Settings struct {
	// MCP are the settings of `mcp-sidecar mcp`.
	MCP MCPSettings
}

// MCPSettings are the [mcp] table: the gateway's settings.
type MCPSettings struct {
	// Deferred is "deferred", --deferred: clients get search_tools,
	// describe_tools and call_tool in place of the catalog.
	Deferred *bool
}

// DefaultSettingsFile is $XDG_CONFIG_HOME/mcp-sidecar/config.toml (else
// ~/.config/mcp-sidecar/config.toml); ok is false when neither is an
// absolute path.
func DefaultSettingsFile(env Lookup) (path string, ok bool) {
	dir, ok := env.XDGDir("XDG_CONFIG_HOME", ".config")
	if !ok {
		return "", false
	}
	return filepath.Join(dir, "mcp-sidecar", SettingsFileName), true
}

// settingsPolicy is how the file is read: the user's (or root's) and
// written by no one else, as the trust record, since it changes what the
// user's clients are given.
var settingsPolicy = safefile.Policy{Follow: true, Owner: safefile.OwnerSelfOrRoot, Deny: 0o022, MaxBytes: maxSettings}

// ReadSettings reads the settings file at path; a missing file is empty
// settings. An unknown key is an error (with the known key it is closest
// to), so that a misspelt setting is not silently without effect, and so
// is a value of the wrong type.
func ReadSettings(path string) (*Settings, error) {
	s := &Settings{}
	data, _, err := safefile.ReadFile(path, settingsPolicy)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		var se *safefile.Error
		if errors.As(err, &se) {
			return nil, &Error{File: path, Message: "refused: " + se.Reason}
		}
		return nil, fmt.Errorf("settings file: %w", err)
	}
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		return nil, describeTOMLError(path, err)
	}
	bad := func(key, format string, args ...any) error {
		return &Error{File: path, Key: key, Message: fmt.Sprintf(format, args...)}
	}
	for _, name := range sortedAnyKeys(top) {
		if name != "mcp" {
			return nil, bad(name, "unknown key%s (known: [mcp] deferred)", didYouMean(name, []string{"mcp"}))
		}
		table, ok := top[name].(map[string]any)
		if !ok {
			return nil, bad(name, "expected a table ([mcp])")
		}
		for _, key := range sortedAnyKeys(table) {
			switch key {
			case "deferred":
				b, ok := table[key].(bool)
				if !ok {
					return nil, bad("mcp."+key, "expected true or false")
				}
				s.MCP.Deferred = &b
			default:
				return nil, bad("mcp."+key, "unknown key%s (known: deferred)", didYouMean(key, []string{"deferred"}))
			}
		}
	}
	return s, nil
}

func didYouMean(key string, known []string) string {
	if c := closest(key, known); c != "" {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
