#!/usr/bin/env bash
# Runs the example host against an mcp-sidecar binary.
#
#   bash examples/typescript-host/run.sh [path/to/mcp-sidecar]
#
# Without a path (and without MCP_SIDECAR_BIN) it builds the sidecar from
# this repository first. Installs the pinned packages (package-lock.json)
# with npm ci when node_modules is missing or stale. Needs Node >= 20.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-${MCP_SIDECAR_BIN:-}}"
if [[ -z "$bin" ]]; then
  bin="$here/.mcp-sidecar"
  (cd "$here/../.." && go build -o "$bin" .)
fi
if ! cmp -s "$here/package-lock.json" "$here/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$here/node_modules/.package-lock.json.installed"
fi
exec node "$here/host.mjs" "$bin"
