#!/usr/bin/env node
// Judges a conformance run: the reference-server tests (node:test results
// from lib/json-reporter.mjs) and the official client scenarios (from
// official.mjs) against expected-failures.yml. Prints a summary table,
// writes RESULTS.md, and exits 1 on an unexpected failure or on an expected
// failure that now passes (the baseline must then be updated).
//
// Usage: node report.mjs <tests.jsonl> <official.jsonl> <RESULTS.md> [header lines...]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [testsFile, officialFile, resultsFile, ...header] = process.argv.slice(2);

const jsonl = (f) =>
  existsSync(f)
    ? readFileSync(f, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];

/** expected-failures.yml: "  - name   # reason" lines under "client:". */
function readBaseline() {
  const map = new Map();
  const text = readFileSync(path.join(here, 'expected-failures.yml'), 'utf8');
  for (const line of text.split('\n')) {
    const m = line.match(/^\s+-\s+(\S+)\s*(?:#\s*(.*))?$/);
    if (m) map.set(m[1], m[2]?.trim() ?? '');
  }
  return map;
}

/** Leaf tests with their parents' names: node reports children first. */
function testRows(events) {
  const rows = [];
  for (const [i, e] of events.entries()) {
    const isParent = i > 0 && events[i - 1].nesting === e.nesting + 1;
    if (isParent) {
      // Name the children that precede this parent.
      for (let j = i - 1; j >= 0 && events[j].nesting > e.nesting; j--) {
        if (events[j].nesting === e.nesting + 1) events[j].parent = e.name;
      }
      continue;
    }
    rows.push(e);
  }
  // Parents of parents: resolve once every event is named.
  return rows.map((e) => {
    const file = path.basename(e.file ?? '').replace(/\.test\.mjs$/, '');
    const scenario = [file, e.parent, e.name].filter(Boolean).join(' › ');
    return { scenario, pass: e.pass, ms: e.ms, detail: (e.error ?? '').replace(/\s+/g, ' ').trim() };
  });
}

const baseline = readBaseline();
const tests = testRows(jsonl(testsFile));
const official = jsonl(officialFile);

const problems = [];
const officialRows = official
  .sort((a, b) => a.id.localeCompare(b.id))
  .map((r) => {
    const expected = baseline.has(r.id);
    let verdict;
    if (r.pass && expected) {
      verdict = 'UNEXPECTED PASS';
      problems.push(`${r.id} passed but is listed in conformance/expected-failures.yml: remove its line`);
    } else if (r.pass) verdict = 'pass';
    else if (expected) verdict = 'expected fail';
    else {
      verdict = 'FAIL';
      problems.push(`${r.id} failed: ${r.detail}`);
    }
    return { ...r, verdict, reason: expected ? baseline.get(r.id) : r.detail };
  });
for (const name of baseline.keys()) {
  if (!official.some((r) => r.id === name) && official.length > 0) {
    problems.push(`${name} is in expected-failures.yml but was not run: remove its line`);
  }
}
for (const t of tests.filter((t) => !t.pass)) problems.push(`${t.scenario} failed: ${t.detail}`);
if (tests.length === 0) problems.push('no reference-server test ran');
if (official.length === 0) problems.push('no official conformance scenario ran');

const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const esc = (s) => String(s ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');

const md = [];
md.push('# Conformance results', '');
md.push('Written by `conformance/run.sh`; do not edit by hand.', '');
for (const h of header) md.push(`- ${h}`);
md.push('');
md.push('## Reference servers through the sidecar', '');
md.push('| scenario | result | time |', '|---|---|---|');
for (const t of tests) md.push(`| ${esc(t.scenario)} | ${t.pass ? 'pass' : `**FAIL**: ${esc(t.detail)}`} | ${secs(t.ms)} |`);
md.push('', '## Official MCP conformance client scenarios', '');
md.push('| scenario | release | result | time | note |', '|---|---|---|---|---|');
for (const r of officialRows) {
  const res = r.verdict === 'pass' || r.verdict === 'expected fail' ? r.verdict : `**${r.verdict}**`;
  md.push(`| ${esc(r.id)} | ${esc(r.release)} | ${res} | ${secs(r.ms)} | ${esc(r.reason)} |`);
}
const passed = tests.filter((t) => t.pass).length + officialRows.filter((r) => r.verdict === 'pass').length;
const expectedFails = officialRows.filter((r) => r.verdict === 'expected fail').length;
const failed = tests.length + officialRows.length - passed - expectedFails;
md.push('', `Total: ${passed} passed, ${expectedFails} expected failures, ${failed} unexpected.`);
if (problems.length) md.push('', '## Problems', '', ...problems.map((p) => `- ${esc(p)}`));
writeFileSync(resultsFile, md.join('\n') + '\n');

// The console table.
const rows = [
  ...tests.map((t) => [t.scenario, t.pass ? 'pass' : 'FAIL', secs(t.ms)]),
  ...officialRows.map((r) => [`official: ${r.id}`, r.verdict, secs(r.ms)]),
];
const w0 = Math.min(110, Math.max(...rows.map((r) => r[0].length), 8));
const w1 = Math.max(...rows.map((r) => r[1].length), 6);
const line = (a, b, c) => `${a.length > w0 ? a.slice(0, w0 - 1) + '…' : a.padEnd(w0)}  ${b.padEnd(w1)}  ${c.padStart(7)}`;
console.log('\n' + line('scenario', 'result', 'time'));
console.log('-'.repeat(w0 + w1 + 11));
for (const r of rows) console.log(line(...r));
console.log('');
for (const p of problems) console.log(`PROBLEM: ${p}`);
console.log(`results written to ${path.relative(process.cwd(), resultsFile)}`);
console.log(`conformance: ${passed} passed, ${failed} failed, ${expectedFails} skipped`);
process.exit(problems.length ? 1 : 0);
