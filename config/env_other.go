//go:build !windows

package config

// platformEnv are the variables of the allowlist particular to the
// platform: none outside Windows.
var platformEnv []string
