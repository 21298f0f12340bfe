package catalog

import (
	"slices"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// Filter is a server's enabled_tools and disabled_tools, matched against raw
// tool names. Enabled nil allows every tool; a non-nil empty Enabled allows
// none. Enabled is applied first, then Disabled removes.
type Filter struct {
	Enabled, Disabled []string
}

// FilterOf is the filter of a server's configuration.
func FilterOf(cfg *config.ServerConfig) Filter {
	if cfg == nil {
		return Filter{}
	}
	return Filter{Enabled: cfg.EnabledTools, Disabled: cfg.DisabledTools}
}

// Allows reports whether the raw tool name passes the filter.
func (f Filter) Allows(tool string) bool {
	if f.Enabled != nil && !slices.Contains(f.Enabled, tool) {
		return false
	}
	return !slices.Contains(f.Disabled, tool)
}

// Apply returns the tools that pass the filter, in order. It allocates a new
// slice; tools is not modified.
func (f Filter) Apply(tools []Tool) []Tool {
	out := make([]Tool, 0, len(tools))
	for _, t := range tools {
		if f.Allows(t.Name) {
			out = append(out, t)
		}
	}
	return out
}
