#!/usr/bin/env bash
# Builds and tests the TypeScript client against a real mcp-sidecar binary.
#
#   bash clients/typescript/run.sh [path/to/mcp-sidecar]    (or MCP_SIDECAR_BIN=...)
#
# Without a path it builds the sidecar from this repository. Installs the
# pinned packages (package-lock.json) with npm ci when node_modules is
# missing or stale, checks that src/protocol.ts is what the schema gives,
# type-checks and compiles with tsc --strict, checks the type tests
# (typetest/), and runs the tests with node's test runner. Needs Node >= 20,
# and Go for the OAuth-protected test server (internal/testing/oauthtest/serve) the
# onAuthorize tests answer.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:-${MCP_SIDECAR_BIN:-}}"
if [[ -z "$bin" ]]; then
  bin="$here/.mcp-sidecar"
  (cd "$here/../.." && go build -o "$bin" .)
fi
(cd "$here/../.." && go build -o "$here/.oauthtest-serve" ./internal/testing/oauthtest/serve)
cd "$here"
if ! cmp -s package-lock.json node_modules/.package-lock.json.installed 2>/dev/null; then
  # The platform packages are left out: tests run the binary given above,
  # and nothing from the registry under those names is ever installed here.
  npm ci --omit=optional --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.package-lock.json.installed
fi
node scripts/gen-types.mjs --check
rm -rf dist
npx tsc -p tsconfig.json
# The type tests (typetest/): what must compile and what must not.
npx tsc -p tsconfig.typetest.json
MCP_SIDECAR_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" MCP_SIDECAR_OAUTH_SERVE="$here/.oauthtest-serve" \
  node --test test/
