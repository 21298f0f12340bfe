#!/usr/bin/env bash
# Installs server-everything, which the npm-dependent benchmark rows need
# (measurements 1 and 7 on server-everything, measurement 3's ten servers),
# into bench/.work/, never committed. Without it those rows skip with a
# message; everything else runs.
set -euo pipefail
cd "$(dirname "$0")"
version=2026.8.31 # the version conformance/package.json pins
mkdir -p .work
if [ ! -f .work/package.json ]; then
  printf '{"name":"mcp-sidecar-bench","private":true}\n' > .work/package.json
fi
npm install --prefix .work --no-audit --no-fund --save-exact "@modelcontextprotocol/server-everything@${version}"
node -e 'console.log("server-everything", require("./.work/node_modules/@modelcontextprotocol/server-everything/package.json").version)'
