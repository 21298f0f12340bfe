# Sourced by the Rust run.sh scripts: makes sure cargo and the crates Debian
# packages (serde, serde_derive, serde_json) are there, installing them with
# apt-get when they are not (root, as CI is).
apt_install() {
  echo "rust: installing Debian's $*"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
missing=()
for crate in serde serde_derive serde_json; do
  compgen -G "/usr/share/cargo/registry/$crate-1.*" >/dev/null || missing+=("librust-${crate//_/-}-dev")
done
if ((${#missing[@]})); then
  apt_install "${missing[@]}"
fi
if ! command -v cargo >/dev/null && [[ -x "${HOME:-/root}/.cargo/bin/cargo" ]]; then
  PATH="${HOME:-/root}/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null; then
  apt_install cargo
fi
cargo --version
