#!/usr/bin/env node
// Runs the official MCP conformance client scenarios with mcp-sidecar as the
// client under test (through adapter.mjs) and writes one JSON line per
// scenario to the file named by argv[2]: {scenario, pass, ms, expected,
// reason, detail}. The judgement against the baseline is report.mjs's.
//
// Every client scenario of the suite's newest release (conformance-next in
// package.json) is run, each at the protocol version the runner picks for it
// (a scenario introduced in 2026-07-28 at 2026-07-28, the others at
// 2025-11-25), and those of 2026-07-28's requirements that the runner ran at
// an older version are run again at 2026-07-28 (--spec-version). The adapter
// is the same host every time, with its default settings: nothing is set per
// scenario but what the scenario's context gives any client. Scenarios run a
// few at a time: each is a mock server, a sidecar and one MCP server
// connection.
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
const SUITE = 'conformance-next';
const cli = path.join(path.dirname(require.resolve(`${SUITE}/package.json`)), 'dist', 'index.js');
const suiteVersion = JSON.parse(readFileSync(require.resolve(`${SUITE}/package.json`), 'utf8')).version;
const MODERN = '2026-07-28';

/** Client scenarios of the suite with the versions each applies to, from its own `list`. */
function clientScenarios() {
  const text = execFileSync(node, [cli, 'list'], { encoding: 'utf8' });
  const client = text.split(/Client scenarios[^\n]*\n/)[1]?.split(/\n\s*\n/)[0] ?? '';
  return [...client.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)].map((m) => ({ name: m[1], versions: m[2].split(',') }));
}

/**
 * @typedef {{id: string, scenario: string, args?: string[], env?: Record<string,string>}} Run
 * @type {Run[]}
 */
const scenarios = clientScenarios();
const runs = [
  ...scenarios.map((s) => ({ id: s.name, scenario: s.name })),
  // The runner runs a scenario of several versions at the oldest it
  // defines for a client (2025-11-25, on the stateful mock); 2026-07-28 is
  // another wire (no initialize, stateless validation of every request).
  ...scenarios
    .filter((s) => s.versions.includes(MODERN) && s.versions.length > 1)
    .map((s) => ({ id: `${s.name} (${MODERN})`, scenario: s.name, args: ['--spec-version', MODERN] })),
  // The other two ways a host takes part in OAuth: it catches the redirect
  // itself, or it declares no capability and opens the URL of
  // needs_authorization by hand (the default run opens it in a browser).
  ...['auth/metadata-default', 'auth/scope-step-up', 'auth/pre-registration'].flatMap((s) => [
    { id: `${s} (host catches the redirect)`, scenario: s, env: { ADAPTER_AUTH_MODE: 'redirect' } },
    { id: `${s} (host without authorization capability)`, scenario: s, env: { ADAPTER_AUTH_MODE: 'none' } },
  ]),
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
      [cli, 'client', '--command', `${node} ${adapter}`, '--scenario', run.scenario, ...(run.args ?? []), '--timeout', '30000', '-o', dir],
      { env: { ...process.env, ...(run.env ?? {}) }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    child.on('close', (code) => {
      writeFileSync(path.join(dir, 'runner.log'), log);
      resolve({
        id: run.id,
        release: `@modelcontextprotocol/conformance@${suiteVersion}`,
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
