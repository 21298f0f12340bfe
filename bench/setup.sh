#!/usr/bin/env bash
# Installs what the npm-dependent benchmark (measurement 3, ten
# server-everything servers) needs into bench/.work/, never committed.
# Without it that benchmark skips with a message; everything else runs.
set -euo pipefail
cd "$(dirname "$0")"
version=2026.8.31 # the version the conformance suite and FIELD-NOTES.md pin
mkdir -p .work
if [ ! -f .work/package.json ]; then
  printf '{"name":"mcp-sidecar-bench","private":true}\n' > .work/package.json
fi
npm install --prefix .work --no-audit --no-fund --save-exact "@modelcontextprotocol/server-everything@${version}"
node -e 'console.log("server-everything", require("./.work/node_modules/@modelcontextprotocol/server-everything/package.json").version)'
