#!/usr/bin/env bash
# Makes a Rust project that depends on this crate build offline against the
# crates Debian packages (/usr/share/cargo/registry), as this crate's own
# build does:
#
#   bash path/to/mcp-sidecar/clients/rust/offline.sh [PROJECT_DIR]    (default: .)
#
# 1. Checks that Debian's serde, serde_derive and serde_json are installed,
#    and installs them with apt-get when they are not and this runs as root
#    (otherwise it says what to install, and exits 1).
# 2. Gives PROJECT_DIR/.cargo/config.toml the source replacement of crates.io
#    by that directory (creates the file, or adds the tables to one that has
#    no [source.crates-io]; refuses a file that replaces crates.io otherwise).
#
# Then `cargo build` in PROJECT_DIR needs no network. Every dependency of the
# project must then come from Debian (librust-*-dev packages); a Cargo.lock
# made against crates.io may name newer versions: `cargo update --offline`
# resolves it again. Without this file, `cargo build --offline --config
# 'source.crates-io.replace-with="debian-packages"' --config
# 'source.debian-packages.directory="/usr/share/cargo/registry"'` does the same
# for one build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
project="${1:-.}"
if [[ ! -f "$project/Cargo.toml" ]]; then
  echo "offline.sh: $project has no Cargo.toml: give the folder of the project that depends on mcp-sidecar-client" >&2
  exit 2
fi
registry=/usr/share/cargo/registry

missing=()
for crate in serde serde_derive serde_json; do
  compgen -G "$registry/$crate-1.*" >/dev/null || missing+=("librust-${crate//_/-}-dev")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "offline.sh: Debian's crates are not installed: run as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "offline.sh: installing Debian's ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The source tables of this crate's .cargo/config.toml (not its [net]
# offline = true: with crates.io replaced, cargo needs no network for it).
tables="$(sed -n '/^\[source.crates-io\]/,/^\[net\]/p' "$here/.cargo/config.toml" | sed '/^\[net\]/d')"
tables="${tables%$'\n'}"
config="$project/.cargo/config.toml"
mkdir -p "$project/.cargo"
if [[ ! -e "$config" ]]; then
  {
    echo "# Build offline against the Rust crates Debian packages in $registry"
    echo "# (written by mcp-sidecar's clients/rust/offline.sh)."
    echo "$tables"
  } >"$config"
  echo "offline.sh: wrote $config"
elif grep -q '^replace-with *= *"debian-packages"' "$config"; then
  echo "offline.sh: $config already builds against $registry"
elif grep -q '^\[source\.crates-io\]' "$config"; then
  echo "offline.sh: $config already replaces crates.io with another source: point it at $registry by hand" >&2
  exit 1
else
  printf '\n# Build offline against the Rust crates Debian packages (mcp-sidecar'"'"'s clients/rust/offline.sh).\n%s\n' "$tables" >>"$config"
  echo "offline.sh: added the source replacement to $config"
fi
