#!/usr/bin/env bash
# Tests the Rust client crate against a real mcp-sidecar binary.
#
#   bash clients/rust/run.sh [path/to/mcp-sidecar]    (or MCP_SIDECAR_BIN=...)
#
# Builds offline against the crates Debian packages (see .cargo/config.toml)
# and installs them when missing (apt-get: root, as CI is). Without a path it
# builds the sidecar from this repository. Builds the OAuth-protected test
# server (internal/testing/oauthtest/serve) the mcp/authorize tests answer; the
# tests run clients/testdata/mcp-test-server.mjs with node. Then builds a
# fresh project outside the repository that depends on the crate, offline,
# set up by offline.sh alone (tests/scratch-project.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$here/debian-crates.sh"

node "$here/scripts/gen-types.mjs" --check

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
bin="${1:-${MCP_SIDECAR_BIN:-}}"
if [[ -z "$bin" ]]; then
  mkdir -p "$CARGO_TARGET_DIR"
  bin="$CARGO_TARGET_DIR/mcp-sidecar"
  (cd "$root" && go build -o "$bin" .)
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
mkdir -p "$CARGO_TARGET_DIR"
oauth_serve="$(cd "$CARGO_TARGET_DIR" && pwd)/oauthtest-serve"
(cd "$root" && go build -o "$oauth_serve" ./internal/testing/oauthtest/serve)

cd "$here"
MCP_SIDECAR_BIN="$bin" MCP_SIDECAR_OAUTH_SERVE="$oauth_serve" cargo test --offline --quiet
bash "$here/tests/scratch-project.sh"
