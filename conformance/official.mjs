#!/usr/bin/env node
// Runs the official MCP conformance client scenarios with mcp-sidecar as the
// client under test (through adapter.mjs) and writes one JSON line per
// scenario to the file named by argv[2]: {scenario, pass, ms, expected,
// reason, detail}. The judgement against the baseline is report.mjs's.
//
// Every client scenario of the pinned release is run, plus the named ones of
// the newer release (conformance-next). Scenarios run a few at a time: each
// is a mock server, a sidecar and one MCP server connection.
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const out = process.argv[2] ?? path.join(here, '.work', 'results', 'official.jsonl');
const resultsDir = path.join(path.dirname(out), 'official');
const node = process.execPath;
const adapter = path.join(here, 'adapter.mjs');
const cli = (pkg) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'dist', 'index.js');
const version = (pkg) => JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')).version;

const PINNED = '@modelcontextprotocol/conformance';
const NEXT = 'conformance-next';

/** Client scenario names of a release, from its own `list`. */
function clientScenarios(pkg) {
  const text = execFileSync(node, [cli(pkg), 'list'], { encoding: 'utf8' });
  const client = text.split(/Client scenarios[^\n]*\n/)[1] ?? '';
  return [...client.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
}

/**
 * @typedef {{id: string, pkg: string, scenario: string, env?: Record<string,string>}} Run
 * @type {Run[]}
 */
const runs = [
  ...clientScenarios(PINNED).map((s) => ({ id: s, pkg: PINNED, scenario: s })),
  { id: 'json-schema-2020-12-preservation', pkg: NEXT, scenario: 'json-schema-2020-12-preservation' },
  { id: 'request-metadata', pkg: NEXT, scenario: 'request-metadata' },
  // The pinned release's metadata for this scenario names an issuer that is
  // not the one its URL was built from, which go-sdk (and so the sidecar)
  // refuses; the newer release serves the right issuer, and must pass.
  {
    id: `auth/2025-03-26-oauth-metadata-backcompat (suite ${version(NEXT)})`,
    pkg: NEXT,
    scenario: 'auth/2025-03-26-oauth-metadata-backcompat',
  },
  // The same scenario with the server opted in to the 2026-07-28 protocol
  // (config key protocol_version), which the sidecar's HTTP default is not.
  // The other two ways a host takes part in OAuth: it catches the redirect
  // itself, or it declares no capability and opens the URL of
  // needs_authorization by hand (the default run opens it in a browser).
  ...['auth/metadata-default', 'auth/scope-step-up', 'auth/pre-registration'].flatMap((s) => [
    { id: `${s} (host catches the redirect)`, pkg: PINNED, scenario: s, env: { ADAPTER_AUTH_MODE: 'redirect' } },
    { id: `${s} (host without authorization capability)`, pkg: PINNED, scenario: s, env: { ADAPTER_AUTH_MODE: 'none' } },
  ]),
  {
    id: 'request-metadata (protocol_version 2026-07-28)',
    pkg: NEXT,
    scenario: 'request-metadata',
    env: { ADAPTER_PROTOCOL_VERSION: '2026-07-28' },
  },
];

const only = process.env.CONFORMANCE_ONLY; // a regexp, to run a subset by hand
const selected = only ? runs.filter((r) => new RegExp(only).test(r.id)) : runs;

function runOne(run, index) {
  const dir = path.join(resultsDir, String(index).padStart(2, '0'));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(
      node,
      [cli(run.pkg), 'client', '--command', `${node} ${adapter}`, '--scenario', run.scenario, '--timeout', '30000', '-o', dir],
      { env: { ...process.env, ...(run.env ?? {}) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    child.on('close', (code) => {
      writeFileSync(path.join(dir, 'runner.log'), log);
      resolve({
        id: run.id,
        release: `${run.pkg === NEXT ? '@modelcontextprotocol/conformance' : run.pkg}@${version(run.pkg)}`,
        pass: code === 0,
        ms: Date.now() - started,
        detail: code === 0 ? '' : summarise(dir, log),
        log: path.relative(here, dir),
      });
    });
  });
}

/** The failed or warning checks of a scenario, in one line. */
function summarise(dir, log) {
  const checks = [];
  const files = existsSync(dir) ? readdirSync(dir, { recursive: true }) : [];
  for (const f of files.filter((f) => path.basename(f) === 'checks.json')) {
    checks.push(...JSON.parse(readFileSync(path.join(dir, f), 'utf8')));
  }
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  if (bad.length) return bad.map((c) => `${c.id}: ${c.errorMessage ?? c.description}`).join('; ').slice(0, 400);
  const adapterErr = log.match(/\[adapter [^\]]*\] FAILED: (.*)/);
  if (adapterErr) return adapterErr[1].slice(0, 400);
  return (log.match(/CLIENT TIMED OUT|CLIENT EXITED WITH ERROR[^\n]*/)?.[0] ?? 'failed').slice(0, 400);
}

mkdirSync(resultsDir, { recursive: true });
writeFileSync(out, '');
const concurrency = Number(process.env.CONFORMANCE_CONCURRENCY || 3);
let next = 0;
async function worker() {
  while (next < selected.length) {
    const i = next++;
    const r = await runOne(selected[i], i);
    appendFileSync(out, JSON.stringify(r) + '\n');
    console.log(`${r.pass ? 'pass' : 'fail'}  ${r.id}  (${r.ms} ms)${r.pass ? '' : `  ${r.detail}`}`);
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
