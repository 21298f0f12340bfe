#!/usr/bin/env bash
# Runs the Rust host example: builds the sidecar from this repository, runs
# the example's unit tests, then the example against the sidecar.
#
#   bash examples/rust-host/run.sh [path/to/mcp-sidecar]    (or MCP_SIDECAR_BIN=...)
#
# Builds offline against the crates Debian packages (see .cargo/config.toml),
# with the typed client of clients/rust, and installs the crates when they
# are missing (apt-get: root, as CI is). Exits non-zero if a test or a check
# fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$root/clients/rust/debian-crates.sh"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
bin="${1:-${MCP_SIDECAR_BIN:-}}"
if [[ -z "$bin" ]]; then
  mkdir -p "$CARGO_TARGET_DIR"
  bin="$CARGO_TARGET_DIR/mcp-sidecar"
  (cd "$root" && go build -o "$bin" .)
fi

cd "$here"
cargo test --offline --quiet
cargo run --offline --quiet -- "$bin"
