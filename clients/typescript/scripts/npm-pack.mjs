#!/usr/bin/env node
// Packs the npm packages of a release, in the esbuild scheme: one package
// per platform holding the binary (with os and cpu set, so npm installs only
// the one that fits), and the client package mcp-sidecar, whose published
// package.json depends on all of them optionally at the same version.
//
//   node clients/typescript/scripts/npm-pack.mjs <release-dir> <out-dir>
//
// <release-dir> is what scripts/release.sh wrote: VERSION and
// bin/<goos>-<goarch>/mcp-sidecar[.exe]. The client must be built (dist/,
// npm run build). Writes the tarballs (npm pack) to <out-dir> and prints
// their names, one per line, the client's first.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const [releaseDir, outDir] = process.argv.slice(2).map((p) => p && path.resolve(p));
if (!releaseDir || !outDir) {
  console.error('usage: node npm-pack.mjs <release-dir> <out-dir>');
  process.exit(2);
}

// Go's names -> Node's (process.platform, process.arch).
const PLATFORMS = { linux: 'linux', darwin: 'darwin', windows: 'win32' };
const ARCHS = { amd64: 'x64', arm64: 'arm64' };
const ALL = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64', 'win32-arm64'];

const version = readFileSync(path.join(releaseDir, 'VERSION'), 'utf8').trim();
const client = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
if (!existsSync(path.join(pkgDir, 'dist', 'index.js'))) {
  console.error(`npm-pack: ${path.join(pkgDir, 'dist')} is missing: build the client first (npm run build)`);
  process.exit(1);
}
mkdirSync(outDir, { recursive: true });
const stageRoot = mkdtempSync(path.join(os.tmpdir(), 'mcp-sidecar-npm-'));

function pack(dir) {
  // npm pack prints the tarball's file name last.
  const out = execFileSync('npm', ['pack', '--pack-destination', outDir, '--loglevel=error'], { cwd: dir, encoding: 'utf8' });
  return out.trim().split('\n').pop();
}

const tarballs = [];
try {
  const built = [];
  for (const entry of readdirSync(path.join(releaseDir, 'bin'))) {
    const [goos, goarch] = entry.split('-');
    const platform = PLATFORMS[goos];
    const arch = ARCHS[goarch];
    if (!platform || !arch) continue;
    const exe = goos === 'windows' ? 'mcp-sidecar.exe' : 'mcp-sidecar';
    const name = `mcp-sidecar-${platform}-${arch}`;
    const dir = path.join(stageRoot, name);
    mkdirSync(path.join(dir, 'bin'), { recursive: true });
    copyFileSync(path.join(releaseDir, 'bin', entry, exe), path.join(dir, 'bin', exe));
    chmodSync(path.join(dir, 'bin', exe), 0o755);
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify(
        {
          name,
          version,
          description: `The mcp-sidecar binary for ${platform} ${arch} (installed by the mcp-sidecar package).`,
          license: client.license,
          os: [platform],
          cpu: [arch],
          files: ['bin/'],
          preferUnplugged: true,
        },
        null,
        2,
      ) + '\n',
    );
    writeFileSync(path.join(dir, 'README.md'), `# ${name}\n\nThe \`mcp-sidecar\` binary for ${platform} ${arch}. Install \`mcp-sidecar\`, which depends on it.\n`);
    tarballs.push(pack(dir));
    built.push(`${platform}-${arch}`);
  }

  // The client: what "files" names, with the release's version and the
  // platform packages as optional dependencies.
  const dir = path.join(stageRoot, 'mcp-sidecar');
  mkdirSync(dir);
  for (const f of client.files) {
    if (existsSync(path.join(pkgDir, f))) cpSync(path.join(pkgDir, f), path.join(dir, f), { recursive: true });
  }
  const published = { ...client, version };
  delete published.devDependencies;
  delete published.scripts;
  published.optionalDependencies = Object.fromEntries(ALL.map((p) => [`mcp-sidecar-${p}`, version]));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify(published, null, 2) + '\n');
  tarballs.unshift(pack(dir));
  const missing = ALL.filter((p) => !built.includes(p));
  if (missing.length) console.error(`npm-pack: no binary for ${missing.join(', ')} in ${releaseDir}`);
} finally {
  rmSync(stageRoot, { recursive: true, force: true });
}
for (const t of tarballs) console.log(t);
