package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/launcherprobe"
)

// newLauncher verifies the host's launcher candidate and returns the
// Monitor that keeps the verdict current for the life of the sidecar. The
// candidate is read from the raw params, because decoding would turn a
// path JSON cannot carry (a non-UTF-8 byte, a lone surrogate escape) into
// another path with U+FFFD in it.
func (s *Server) newLauncher(ctx context.Context, params json.RawMessage) *launcherprobe.Monitor {
	var raw struct {
		Launcher *struct {
			CodexExecutable json.RawMessage `json:"codexExecutable"`
		} `json:"launcher"`
	}
	// The params were decoded once already (decodeParams), so this cannot
	// fail; a failure still leaves no launcher.
	_ = json.Unmarshal(params, &raw)
	if raw.Launcher == nil || len(raw.Launcher.CodexExecutable) == 0 || string(raw.Launcher.CodexExecutable) == `""` || string(raw.Launcher.CodexExecutable) == "null" {
		return launcherprobe.FixedVerdict(launcherprobe.Result{Status: launcherprobe.StatusUnavailable, Reason: "no launcher candidate given in initialize.launcher"})
	}
	path, err := launcherprobe.DecodeCandidate(raw.Launcher.CodexExecutable)
	if err != nil {
		reason := "not a JSON string"
		if errors.Is(err, launcherprobe.ErrNotRepresentable) {
			reason = launcherprobe.ErrNotRepresentable.Error()
		}
		s.logger.Warn("launcher candidate refused", "reason", reason, "err", err)
		return launcherprobe.FixedVerdict(launcherprobe.Result{Status: launcherprobe.StatusUnavailable, Reason: reason})
	}
	// The probes belong to the sidecar, not to this request: they run
	// until the host connection ends (stop closes the Monitor).
	m := s.opts.Prober.Monitor(s.ctx, path, s.launcherChanged)
	m.Verify(ctx)
	return m
}

// launcherChanged reports a new launcher verdict (the file changed after
// initialize) in the sidecar's log and to the host in mcp/log, with no
// sessionId and an empty server name: the launcher is the sidecar's own.
func (s *Server) launcherChanged(r launcherprobe.Result) {
	var level, msg string
	if r.Verified() {
		level, msg = "info", fmt.Sprintf("launcher %s verified", r.Target)
		s.logger.Info("launcher verified", "path", r.Path, "target", r.Target)
	} else {
		level, msg = "warning", fmt.Sprintf("launcher %s unavailable: %s", r.Path, r.Reason)
		s.logger.Warn("launcher unavailable", "path", r.Path, "reason", r.Reason)
	}
	s.logServer("", "", level, msg)
}

// launcherPath is the verified launcher's resolved path as it is now, or "".
// It re-reads the launcher's identity: call it only for a call that would
// carry the launcher.
func (e *environment) launcherPath() string {
	if r := e.launcher.Current(); r.Verified() {
		return r.Target
	}
	return ""
}
