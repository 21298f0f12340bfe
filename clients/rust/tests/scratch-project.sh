#!/usr/bin/env bash
# Builds a fresh project outside this repository that depends on the crate
# by path, as a harness author's own project does: offline, against
# Debian's crates, with nothing but what offline.sh writes into it. A fresh
# CARGO_HOME keeps any cargo configuration of this machine out. run.sh runs
# it; it exits non-zero if the project does not build or run.
#
#   bash clients/rust/tests/scratch-project.sh
set -euo pipefail
crate="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/harness/src"
cat >"$scratch/harness/Cargo.toml" <<EOF
[package]
name = "harness"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
mcp-sidecar-client = { path = "$crate" }
serde_json = "1"
EOF
cat >"$scratch/harness/src/main.rs" <<'EOF'
use mcp_sidecar_client::protocol::CallToolResult;

fn main() {
    let result: CallToolResult =
        serde_json::from_str(r#"{"content":[{"type":"text","text":"built offline"}]}"#).unwrap();
    println!("{}", result.text());
}
EOF
bash "$crate/offline.sh" "$scratch/harness"
out="$(cd "$scratch/harness" && CARGO_HOME="$scratch/cargo-home" cargo run --quiet --offline)"
if [[ "$out" != "built offline" ]]; then
  echo "scratch-project.sh: the project printed ${out@Q}, not 'built offline'" >&2
  exit 1
fi
echo "scratch-project.sh: a project outside the repository built offline against Debian's crates"
