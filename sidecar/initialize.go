package sidecar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/catalog/search"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/peerlog"
	"github.com/mcp-sidecar/mcp-sidecar/launcherprobe"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/oauth"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Feature names of initialize.features.
const (
	FeatureToolListChanged     = "mcp_tool_list_changed" // on unless set false
	FeatureEarlyDiscovery      = "apps_early_resource_discovery"
	FeatureLazyStdioStartup    = "mcp_lazy_stdio_startup"
	FeatureShareStartupListing = "mcp_share_startup_listing" // on unless set false
	FeatureToolOutputLimit     = "mcp_tool_output_limit"     // on unless set false
)

var knownFeatures = []string{FeatureToolListChanged, FeatureEarlyDiscovery, FeatureLazyStdioStartup, FeatureShareStartupListing, FeatureToolOutputLimit}

// featuresOnByDefault are the features a host gets without asking: each
// is what hosts (and the people behind them) expect of an MCP client, and
// a host that does the same itself turns it off with false.
var featuresOnByDefault = []string{FeatureToolListChanged, FeatureShareStartupListing, FeatureToolOutputLimit}

const (
	defaultMaxConcurrentStarts  = 8
	defaultMaxPendingPerSession = 256
	defaultToolNameBytes        = 64
	defaultRefreshCooldown      = 2 * time.Second
)

// environment is what initialize established; it does not change afterwards.
type environment struct {
	servers      map[string]*config.ServerConfig
	order        []string // server names, sorted
	features     map[string]bool
	hostCaps     protocol.HostCapabilities
	launcher     *launcherprobe.Monitor
	maxNameBytes int
	maxPending   int
	// maxServerRequests bounds each server's requests waiting on the host.
	maxServerRequests int
	cooldown          time.Duration
	startSem          *semaphore.Weighted
	shared            *catalog.SharedListings
	disk              *catalog.DiskCache
	// auth keeps the OAuth credentials and runs the authorization flows.
	auth *oauth.Manager
	// scrub holds what is scrubbed from each server's words (secrets.go).
	scrub scrubbers
	// helperSecrets are the values header helpers gave (headers.go).
	helperSecrets helperSecrets
	// inputs are the values of VS Code inputs given so far (inputs.go).
	inputs inputStore

	// maxOutputTokens is the host's limit of a tool's result (0: the
	// default), and outputDir the folder the sessions keep cut results
	// in (outputlimit.go).
	maxOutputTokens int
	outputDir       string

	// searches holds the search analyses of servers' tools that sessions
	// share (tools/search).
	searches *search.Shared

	// badCache holds the scope keys whose unusable cache file was already
	// reported: one bad file is reported once, not once per session.
	badCacheMu sync.Mutex
	badCache   map[string]bool

	// eras holds the era each discovery scope's last connection
	// negotiated, or what its disk entry said (learnt.go).
	erasMu sync.Mutex
	eras   map[string]mcpclient.Era
}

// reportBadCache reports whether the unusable cache file of key is news.
func (e *environment) reportBadCache(key string) bool {
	e.badCacheMu.Lock()
	defer e.badCacheMu.Unlock()
	if e.badCache[key] {
		return false
	}
	if e.badCache == nil {
		e.badCache = map[string]bool{}
	}
	e.badCache[key] = true
	return true
}

// untrustedDirKey is the reportBadCache key of an untrusted cache folder:
// one report for the folder, whichever server or session meets it.
const untrustedDirKey = "untrusted cache folder"

// untrustedDir reports whether err refuses the cache folder itself (not
// one file in it).
func (e *environment) untrustedDir(err error) bool {
	var ue *catalog.UntrustedError
	return e.disk != nil && errors.As(err, &ue) && ue.Path == e.disk.Dir
}

// cacheRepaired forgets that key's file was bad: a later corruption is
// news again.
func (e *environment) cacheRepaired(key string) {
	e.badCacheMu.Lock()
	delete(e.badCache, key)
	e.badCacheMu.Unlock()
}

// feature reports whether a feature is on; initialize filled in the
// defaults of those the host did not set.
func (e *environment) feature(name string) bool {
	return e.features[name]
}

func (s *Server) initialize(ctx context.Context, rq *request) (res result, err error) {
	params := rq.params
	defer func() {
		if err != nil {
			s.mu.Lock()
			s.initializing = false // the host may correct its config and try again
			s.mu.Unlock()
		}
	}()
	var p protocol.InitializeParams
	if err := decodeParams(params, &p); err != nil {
		return result{}, err
	}
	inlineName := s.opts.InlineSource
	if inlineName == "" {
		inlineName = config.InlineSource
	}
	loaded, err := loadConfig(&p, s.opts.Env, inlineName)
	if err != nil {
		return result{}, err
	}
	unaskedInputs(loaded, p.Capabilities.Inputs)
	for _, e := range loaded.Errors {
		// The host has them in the result; the log is for its operators.
		s.logger.Info("config error", "problem", e.Error())
	}
	for _, w := range loaded.Warnings {
		s.logger.Info("config warning", "problem", w.Error())
	}
	for _, u := range loaded.Untrusted {
		s.logger.Info("project server not trusted, not started", "server", u.Server, "file", u.Source.Path, "reason", u.Reason)
	}
	servers := loaded.Servers
	if d := s.opts.StartupTimeout; d > 0 {
		secs := d.Seconds()
		for _, cfg := range servers {
			cfg.StartupTimeoutSec = &secs
		}
	}
	env := &environment{
		servers:      servers,
		features:     map[string]bool{},
		hostCaps:     p.Capabilities,
		maxNameBytes: defaultToolNameBytes,
		maxPending:   defaultMaxPendingPerSession,
		cooldown:     defaultRefreshCooldown,
		shared:       catalog.NewSharedListings(),
		searches:     search.NewShared(search.DefaultRanking()),
		outputDir:    outputRoot(s.opts.Env),
	}
	env.shared.OnWait = s.hook().sharedListingWait
	starts := int64(defaultMaxConcurrentStarts)
	var frameLimit int64 // the host's own bound of its frames; 0: the flag's
	if l := p.Limits; l != nil {
		if l.MaxFrameBytes > 0 {
			if l.MaxFrameBytes < minFrameBytes {
				return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams,
					fmt.Sprintf("limits.maxFrameBytes must be at least %d", minFrameBytes))
			}
			frameLimit = l.MaxFrameBytes
		}
		if l.MaxToolNameBytes > 0 {
			if l.MaxToolNameBytes < 16 {
				return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "limits.maxToolNameBytes must be at least 16")
			}
			env.maxNameBytes = l.MaxToolNameBytes
		}
		if l.MaxConcurrentStarts > 0 {
			starts = int64(l.MaxConcurrentStarts)
		}
		if l.MaxPendingPerSession > 0 {
			env.maxPending = l.MaxPendingPerSession
		}
		if l.MaxServerRequests > 0 {
			env.maxServerRequests = l.MaxServerRequests
		}
		if l.RefreshCooldownMs > 0 {
			env.cooldown = millis(l.RefreshCooldownMs)
		}
		if l.MaxToolOutputTokens > 0 {
			env.maxOutputTokens = l.MaxToolOutputTokens
		}
	}
	env.startSem = semaphore.NewWeighted(starts)
	var unknownFeatures []string
	for name, on := range p.Features {
		if !slices.Contains(knownFeatures, name) {
			s.logger.Warn("unknown feature ignored", peerlog.String("feature", name))
			unknownFeatures = append(unknownFeatures, name)
			continue
		}
		env.features[name] = on
	}
	for _, name := range featuresOnByDefault {
		if _, set := env.features[name]; !set {
			env.features[name] = true
		}
	}
	slices.Sort(unknownFeatures)
	for name := range servers {
		env.order = append(env.order, name)
	}
	slices.Sort(env.order)

	cacheDir := p.CacheDir
	if cacheDir == "" {
		dir, err := catalog.DefaultCacheDir(s.opts.Env)
		if err != nil {
			s.logger.Warn("no catalog cache directory: lazy startup disabled", "err", err)
		}
		cacheDir = dir
	}
	if cacheDir != "" {
		env.disk = &catalog.DiskCache{Dir: cacheDir}
	}

	env.launcher = s.newLauncher(ctx, params)
	env.auth = s.newAuthManager(&p)

	// The host may lower the operator's limit, never raise it. It holds
	// from the frame after this answer (set before the answer is written,
	// so that no frame the host sends after reading it escapes).
	if frameLimit > 0 && frameLimit < s.maxFrameBytes() {
		s.conn.SetMaxFrameBytes(frameLimit)
	}
	s.mu.Lock()
	s.env = env
	s.initialized = true
	s.initializing = false
	s.mu.Unlock()

	launcher := env.launcher.Current()
	features := []string{}
	for _, f := range knownFeatures {
		if env.feature(f) {
			features = append(features, f)
		}
	}
	return result{value: protocol.InitializeResult{
		ServerInfo:      protocol.Implementation{Name: s.opts.Name, Version: s.opts.Version},
		ProtocolVersion: protocol.Version,
		Capabilities:    protocol.SidecarCapabilities{Features: features},
		Launcher:        launcher.Report(),
		Servers:         append([]string{}, env.order...), // [] when none, never null
		Config:          configReport(loaded),
		UnknownFeatures: unknownFeatures,
	}}, nil
}

// minFrameBytes is the least limits.maxFrameBytes a host may ask for: a
// smaller limit is a mistake (kibibytes meant as bytes) that would refuse
// almost every request.
const minFrameBytes = 4096

// maxFrameBytes is the operator's limit of a host frame (--max-frame-bytes).
func (s *Server) maxFrameBytes() int64 {
	if s.opts.MaxFrameBytes > 0 {
		return s.opts.MaxFrameBytes
	}
	return protocol.DefaultMaxFrameBytes
}

func (s *Server) environment() *environment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.env
}

func unknownSession(id string) *protocol.Error {
	return protocol.NewError(protocol.CodeUnknownSession, protocol.KindUnknownSession, fmt.Sprintf("unknown session %q", id))
}
