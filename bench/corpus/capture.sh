#!/usr/bin/env bash
# Captures the search corpus (bench/README.md, "Tool search"): installs the
# MCP servers pinned in servers.json (npm, --ignore-scripts: some
# post-install steps download browsers) and js-tiktoken into
# bench/.work/corpus (never committed), lists every server's tools through
# the sidecar's MCP client (tools.json), and counts the real BPE tokens of
# the corpus (tokens.json).
set -euo pipefail
cd "$(dirname "$0")"
work="$(cd .. && pwd)/.work/corpus"
mkdir -p "$work"
if [ ! -f "$work/package.json" ]; then
  printf '{"name":"mcp-sidecar-corpus","private":true}\n' > "$work/package.json"
fi
mapfile -t pkgs < <(node -e '
  const s = require("./servers.json");
  for (const x of s.servers) console.log(x.package + "@" + x.version);
  console.log("js-tiktoken@1.0.21");
')
npm install --prefix "$work" --ignore-scripts --no-audit --no-fund --save-exact "${pkgs[@]}"
cd ..
MCP_SIDECAR_CORPUS_CAPTURE="$work" MCP_SIDECAR_CORPUS_NODE="$(node --version)" \
  go test -count=1 -run '^TestCaptureCorpus$' -v .
MCP_SIDECAR_CORPUS_CAPTURE="$work" go test -count=1 -run '^TestCountCorpusTokens$' -v .
