package cli

import (
	"fmt"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/config"
)

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
		return fmt.Sprintf("hit, %s, %s old", plural(int64(c.Tools), "tool"), age(now.Sub(c.ListedAt)))
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
