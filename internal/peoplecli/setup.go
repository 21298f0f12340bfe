package peoplecli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// loaded is the user's configuration as the commands see it.
type loaded struct {
	// given are the --config files; nil when the files were discovered.
	given []string
	// sources were read, in order; looked are the places discovery
	// considered (when no --config was given).
	sources []config.Source
	looked  []config.Source
	cfg     *config.Loaded
	servers map[string]*config.ServerConfig // the valid ones
	names   []string                        // every server name, valid or not, sorted
	cwd     string
}

// invalid reports the errors of server name's definition.
func (l *loaded) invalid(name string) []*config.Error {
	if c := l.cfg.Servers[name]; c != nil {
		return c.Problems
	}
	return nil
}

// problems are the configuration's errors; warnings its ignored keys.
func (l *loaded) problems() config.Errors { return l.cfg.Errors }
func (l *loaded) warnings() config.Errors { return l.cfg.Warnings }

// loadConfig reads the --config files, or the files discovery finds, with
// the loader the sidecar's initialize uses.
func loadConfig(env Env, files []string) *loaded {
	l := &loaded{given: files, cwd: env.Cwd}
	if len(files) > 0 {
		l.sources = config.FileSources(files)
	} else {
		l.sources, l.looked = config.Discover(config.DiscoverOptions{Home: env.Home, Cwd: env.Cwd, Env: env.lookup})
	}
	l.cfg = config.Load(l.sources, nil, env.lookup)
	l.servers = l.cfg.Valid()
	l.names = l.cfg.Names()
	return l
}

// found reports whether there was any config to read.
func (l *loaded) found() bool { return len(l.sources) > 0 }

// describeSources says which files were read and what each defined, for
// people.
func (l *loaded) describeSources(w io.Writer) {
	switch {
	case len(l.sources) > 0:
		fmt.Fprintln(w, "Config files read (later ones win):")
		for _, r := range l.cfg.Sources {
			line := "  " + r.Describe()
			switch {
			case r.Err != nil:
				line += ": cannot be used (below)"
			case len(r.Servers) > 0:
				line += ": " + strings.Join(r.Servers, ", ")
			default:
				line += ": no servers"
			}
			fmt.Fprintln(w, line)
		}
		for _, rp := range l.cfg.Replaced {
			fmt.Fprintf(w, "  %s: %s replaces %s\n", rp.Server, rp.By.Describe(), rp.Over.Describe())
		}
	case len(l.looked) > 0:
		fmt.Fprintln(w, "No config file found. Looked for:")
		for _, f := range l.looked {
			fmt.Fprintln(w, "  "+f.Describe())
		}
	default:
		fmt.Fprintln(w, "No config file given.")
	}
}

// initializeParams are the params of the in-process initialize: the
// --config files, or discovery from the working directory, as a harness
// sends them.
func (l *loaded) initializeParams(env Env, cacheDir, launcher string) (map[string]any, error) {
	p := map[string]any{
		"clientInfo": map[string]any{"name": "mcp-sidecar-cli", "version": env.Version},
		// Every server starts at once, not eight at a time.
		"limits": map[string]any{"maxConcurrentStarts": max(8, len(l.servers))},
	}
	if l.given != nil {
		p["configFiles"] = l.given
	} else {
		p["configDiscovery"] = map[string]any{"cwd": l.cwd}
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
