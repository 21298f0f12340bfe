#!/usr/bin/env bash
# Runs the example host against an mcp-sidecar binary.
#
#   bash examples/typescript-host/run.sh [path/to/mcp-sidecar]
#
# Without a path (and without MCP_SIDECAR_BIN) it builds the sidecar from
# this repository first. Builds the typed client (clients/typescript) it
# depends on, installs the pinned packages (package-lock.json) with npm ci
# when node_modules is missing or stale, compiles host.ts with tsc --strict,
# and runs it. Needs Node >= 20.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
client="$here/../../clients/typescript"
bin="${1:-${MCP_SIDECAR_BIN:-}}"
if [[ -z "$bin" ]]; then
  bin="$here/.mcp-sidecar"
  (cd "$here/../.." && go build -o "$bin" .)
fi
if ! cmp -s "$client/package-lock.json" "$client/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$client" && npm ci --omit=optional --no-audit --no-fund --loglevel=error)
  cp "$client/package-lock.json" "$client/node_modules/.package-lock.json.installed"
fi
(cd "$client" && rm -rf dist && npx tsc -p tsconfig.json)
if ! cmp -s "$here/package-lock.json" "$here/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$here/node_modules/.package-lock.json.installed"
fi
cd "$here"
rm -rf dist
npx tsc -p tsconfig.json
exec node dist/host.js "$bin"
