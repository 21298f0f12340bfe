#!/usr/bin/env bash
# Builds the release binaries of mcp-sidecar: static (CGO_ENABLED=0),
# -trimpath, one archive per target and their SHA-256 sums.
#
#   scripts/release.sh [-o DIR] [OS/ARCH ...]
#
# Targets default to all six: linux, darwin and windows on amd64 and arm64.
# The version is the VERSION file's, the one every build of the source
# embeds (go run and go build print the same): to release 1.2.3, set
# VERSION to 1.2.3, commit, tag v1.2.3. A commit tagged v* whose tag is not
# v<VERSION> is refused, and so is a $VERSION that differs from the file
# (it cannot change what the binaries say). DIR (default dist/) gets:
#
#   mcp-sidecar_<version>_<os>_<arch>.tar.gz   (.zip for windows): the binary and README.md
#   bin/<os>-<arch>/mcp-sidecar[.exe]          the binaries, for npm packaging
#   SHA256SUMS                                 sha256sum -c checks the archives
#   VERSION                                    the version (npm-pack.mjs names the packages after it)
#
# `mcp-sidecar version` and initialize's serverInfo.version print the version.
# The archives are reproducible: the same commit (and version) gives the
# same bytes, .tar.gz and .zip alike (fixed file times, modes, owner and
# order; CI builds twice and compares). Every target is tried; the exit
# status is 1 if any failed to build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

out="dist"
if [[ "${1:-}" == "-o" ]]; then
  out="$2"
  shift 2
fi
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
fi

version="$(tr -d '[:space:]' <VERSION)"
if [[ -n "${VERSION:-}" && "$VERSION" != "$version" ]]; then
  echo "release: \$VERSION is $VERSION but the VERSION file, which the binaries embed, says $version: edit VERSION" >&2
  exit 2
fi
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null) && [[ "$tag" != "v$version" ]]; then
  echo "release: this commit is tagged $tag but VERSION says $version" >&2
  exit 2
fi
# The version goes into npm package names' versions: it must be semver.
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: version $version is not semver (MAJOR.MINOR.PATCH[-PRERELEASE])" >&2
  exit 2
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/mcp-sidecar_* "$out/SHA256SUMS"
echo "$version" >"$out/VERSION"
echo "release: mcp-sidecar $version -> $out"

# Every archive holds its files with these times (and modes set below), so
# that the same commit gives the same archive, .tar.gz and .zip alike.
epoch='2000-01-01 00:00:00Z'

archive_zip() { # zip FILE DIR: the contents of DIR, without the folder, in name order
  # A zip entry's time is local time: UTC makes it the same everywhere.
  if command -v zip >/dev/null; then
    (cd "$2" && LC_ALL=C ls | TZ=UTC zip -q -X -D "$1" -@)
  else
    TZ=UTC python3 - "$1" "$2" <<'PY'
import os, sys, zipfile
dest, src = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(src)):
        z.write(os.path.join(src, name), name)
PY
  fi
}

failed=()
for target in "${targets[@]}"; do
  goos="${target%/*}" goarch="${target#*/}"
  exe=mcp-sidecar
  [[ "$goos" == windows ]] && exe=mcp-sidecar.exe
  bindir="$out/bin/$goos-$goarch"
  rm -rf "$bindir"
  mkdir -p "$bindir"
  if ! CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" go build -trimpath \
    -ldflags "-s -w" -o "$bindir/$exe" .; then
    echo "release: $target FAILED to build" >&2
    failed+=("$target")
    rm -rf "$bindir"
    continue
  fi
  stage=$(mktemp -d)
  cp "$bindir/$exe" README.md "$stage/"
  # Modes and times fixed (owner too, in the tar), whatever the umask
  # and the clock of the build.
  chmod 0755 "$stage/$exe"
  chmod 0644 "$stage/README.md"
  touch -d "$epoch" "$stage/$exe" "$stage/README.md"
  name="mcp-sidecar_${version}_${goos}_${goarch}"
  if [[ "$goos" == windows ]]; then
    archive_zip "$out/$name.zip" "$stage"
  else
    tar -C "$stage" --owner=0 --group=0 --numeric-owner --mtime="$epoch" --sort=name \
      -cf - "$exe" README.md | gzip -n >"$out/$name.tar.gz"
  fi
  rm -rf "$stage"
  echo "release: $target ok ($(du -h "$bindir/$exe" | cut -f1))"
done

(cd "$out" && sha256sum mcp-sidecar_* >SHA256SUMS)
cat "$out/SHA256SUMS"
if ((${#failed[@]})); then
  echo "release: not built: ${failed[*]}" >&2
  exit 1
fi
