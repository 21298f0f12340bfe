package peoplecli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// loaded is the user's configuration as the commands see it.
type loaded struct {
	// files were read (or, for --config, asked for), in order.
	files []string
	// looked are the default locations, when no --config was given.
	looked   []string
	servers  map[string]*config.ServerConfig // the valid ones
	names    []string                        // every server name, valid or not, sorted
	problems config.Errors
	notes    []string
}

// invalid reports the errors of server name.
func (l *loaded) invalid(name string) []*config.Error {
	var out []*config.Error
	for _, e := range l.problems {
		if e.Server == name {
			out = append(out, e)
		}
	}
	return out
}

// loadConfig reads the --config files, or the default ones that exist, with
// the same loader the sidecar's initialize uses.
func loadConfig(env Env, files []string) *loaded {
	l := &loaded{files: files}
	if len(files) == 0 {
		l.looked = defaultCandidates(env)
		l.files = config.DefaultFiles(env.Home, env.Cwd, env.lookup)
	}
	servers, notes, err := config.Load(l.files, nil, env.lookup)
	l.servers, l.notes = servers, notes
	var errs config.Errors
	if errors.As(err, &errs) {
		l.problems = errs
	} else if err != nil {
		l.problems = config.Errors{{Message: err.Error()}}
	}
	seen := map[string]bool{}
	for name := range servers {
		seen[name] = true
	}
	for _, e := range l.problems {
		if e.Server != "" {
			seen[e.Server] = true
		}
	}
	for name := range seen {
		l.names = append(l.names, name)
	}
	slices.Sort(l.names)
	return l
}

// defaultCandidates are the paths config.DefaultFiles considers, for saying
// where the commands looked.
func defaultCandidates(env Env) []string {
	var out []string
	if ch, ok := env.lookup("CODEX_HOME"); ok && ch != "" {
		out = append(out, filepath.Join(ch, "config.toml"))
	} else if env.Home != "" {
		out = append(out, filepath.Join(env.Home, ".codex", "config.toml"))
	}
	if env.Cwd != "" {
		out = append(out, filepath.Join(env.Cwd, ".mcp.json"), filepath.Join(env.Cwd, ".vscode", "mcp.json"))
	}
	return out
}

// describeSources says which files were read, for people.
func (l *loaded) describeSources(w io.Writer) {
	switch {
	case len(l.files) > 0:
		fmt.Fprintln(w, "Config files read:")
		for _, f := range l.files {
			if _, err := os.Stat(f); err != nil {
				fmt.Fprintf(w, "  %s (cannot be read)\n", f)
				continue
			}
			fmt.Fprintln(w, "  "+f)
		}
	case len(l.looked) > 0:
		fmt.Fprintln(w, "No config file found. Looked for:")
		for _, f := range l.looked {
			fmt.Fprintln(w, "  "+f)
		}
	default:
		fmt.Fprintln(w, "No config file given.")
	}
}

// initializeParams are the params of the in-process initialize. With a
// valid configuration the files go as configFiles, as a harness sends them.
// With errors the sidecar would refuse them all, so the valid servers go
// inline instead: a person still sees how the rest of their setup behaves.
func (l *loaded) initializeParams(env Env, cacheDir, launcher string) (map[string]any, error) {
	p := map[string]any{
		"clientInfo": map[string]any{"name": "mcp-sidecar-cli", "version": env.Version},
		// Every server starts at once, not eight at a time.
		"limits": map[string]any{"maxConcurrentStarts": max(8, len(l.servers))},
	}
	if len(l.problems) == 0 {
		p["configFiles"] = l.files
	} else {
		inline, err := json.Marshal(l.servers)
		if err != nil {
			return nil, fmt.Errorf("encoding the valid servers: %w", err)
		}
		p["servers"] = json.RawMessage(inline)
	}
	if cacheDir != "" {
		p["cacheDir"] = cacheDir
	}
	if launcher != "" {
		p["launcher"] = map[string]any{"codexExecutable": launcher}
	}
	return p, nil
}

// cacheState is what the disk cache holds for one server in the commands'
// discovery scope (no session scope, the current directory as fallback
// cwd): what a lazy session would start from.
type cacheState struct {
	// State is "off" (no cache directory), "miss", "hit" or "unusable".
	State    string    `json:"state"`
	Tools    int       `json:"tools,omitempty"`
	ListedAt time.Time `json:"listedAt,omitzero"`
	Reason   string    `json:"reason,omitempty"`
}

// resolveCacheDir is the sidecar's choice: --cache-dir, else the default.
func resolveCacheDir(env Env, flagDir string) string {
	if flagDir != "" {
		return flagDir
	}
	dir, _ := catalog.DefaultCacheDir(env.lookup)
	return dir
}

// readCache looks up server name's entry the way the sidecar does, keyed by
// catalog.ScopeKey over the same inputs session/open uses.
func readCache(env Env, dir, name string, cfg *config.ServerConfig) cacheState {
	if dir == "" {
		return cacheState{State: "off", Reason: "no cache directory (XDG_CACHE_HOME and HOME unset)"}
	}
	fallback := ""
	if cfg.Transport() == config.TransportStdio && cfg.Cwd == "" {
		fallback = env.Cwd
	}
	key := catalog.ScopeKey(name, cfg, env.lookup, nil, fallback)
	e, err := (&catalog.DiskCache{Dir: dir}).Load(key)
	switch {
	case err != nil:
		return cacheState{State: "unusable", Reason: err.Error()}
	case e == nil:
		return cacheState{State: "miss"}
	}
	return cacheState{State: "hit", Tools: len(e.Tools), ListedAt: e.ListedAt}
}

func (c cacheState) short(now time.Time) string {
	switch c.State {
	case "hit":
		return fmt.Sprintf("hit, %d tools, %s old", c.Tools, age(now.Sub(c.ListedAt)))
	case "unusable":
		return "unusable"
	}
	return c.State
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
