#!/usr/bin/env node
// A minimal host of mcp-sidecar, as a TypeScript agent harness would write
// it: spawn the sidecar, talk JSON-RPC to it over stdio with vscode-jsonrpc
// (LSP framing), run one MCP server (server-everything) in one session, call
// tools, follow progress, cancel a call, and shut everything down.
//
// Usage: node host.mjs <path/to/mcp-sidecar>     (or MCP_SIDECAR_BIN=...)
// Exits non-zero if any check fails.
//
// Plain JavaScript with JSDoc types: copy it into a TypeScript project and
// the types below become interfaces.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import {
  CancellationTokenSource,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from 'vscode-jsonrpc/node';

const require = createRequire(import.meta.url);

/**
 * @typedef {{name: string, server: string, tool: string, title?: string, description?: string,
 *            inputSchema: object, outputSchema?: object, annotations?: object}} Tool
 * @typedef {{sessionId: string, server: string, round: number, status: string, error?: string, tools?: number}} StartupStatus
 * @typedef {{sessionId: string, round: number, ready: string[], failed: {server: string, error: string}[], cancelled: string[]}} StartupComplete
 * @typedef {{token: string|number, value: {progress: number, total?: number, message?: string}}} Progress
 */

const sidecarPath = process.argv[2] ?? process.env.MCP_SIDECAR_BIN;
if (!sidecarPath) {
  console.error('usage: node host.mjs <path/to/mcp-sidecar>');
  process.exit(2);
}

// The MCP server: server-everything from this example's own node_modules,
// run with this Node (no npx, so its process is the one servers/status shows).
const everything = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

let failures = 0;
/** Records a check; the exit status is non-zero if any failed. */
function check(ok, what, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
  if (!ok) failures++;
}

// 1. Spawn the sidecar: stdin/stdout carry the protocol, stderr its logs.
const child = spawn(path.resolve(sidecarPath), [], { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));

// 2. Notifications the sidecar sends. Register handlers before listen().
/** @type {Progress[]} */
const progress = [];
let resolveComplete;
/** @type {Promise<StartupComplete>} */
const startupComplete = new Promise((r) => (resolveComplete = r));
conn.onNotification('mcp/startupStatus', (/** @type {StartupStatus} */ p) => {
  console.log(`  mcp/startupStatus  ${p.server}: ${p.status}${p.tools !== undefined ? ` (${p.tools} tools)` : ''}${p.error ? ` - ${p.error}` : ''}`);
});
conn.onNotification('mcp/startupComplete', (/** @type {StartupComplete} */ p) => {
  console.log(`  mcp/startupComplete round ${p.round}: ready=${JSON.stringify(p.ready)} failed=${JSON.stringify(p.failed)}`);
  if (p.round === 0) resolveComplete(p);
});
conn.onNotification('$/progress', (/** @type {Progress} */ p) => {
  console.log(`  $/progress ${JSON.stringify(p.token)}: ${p.value.progress}/${p.value.total ?? '?'}`);
  progress.push(p);
});
conn.onNotification('mcp/log', (p) => console.log(`  mcp/log [${p.server}] ${p.level}: ${JSON.stringify(p.data).slice(0, 120)}`));
conn.onNotification('mcp/toolsChanged', (p) => console.log(`  mcp/toolsChanged ${p.server} (${p.reason})`));
// Requests the sidecar may send: a server asking the user (elicitation).
conn.onRequest('mcp/elicit', () => ({ action: 'decline' }));
conn.listen();

try {
  // 3. initialize with inline servers (Codex's config keys), then initialized.
  const init = await conn.sendRequest('initialize', {
    clientInfo: { name: 'typescript-host-example', version: '1.0.0' },
    capabilities: {},
    servers: { everything: { command: process.execPath, args: [everything, 'stdio'] } },
  });
  console.log(`initialize: ${init.serverInfo.name} ${init.serverInfo.version}, servers ${JSON.stringify(init.servers)}`);
  check(init.servers.includes('everything'), 'initialize lists the server');
  await conn.sendNotification('initialized', {});

  // 4. One session; eager startup reports through the notifications above.
  const session = await conn.sendRequest('session/open', { startup: 'eager' });
  const { sessionId } = session;
  const complete = await startupComplete;
  check(complete.ready.includes('everything'), 'everything started', JSON.stringify(complete.failed));

  // 5. The catalog: qualified names mcp__<server>__<tool>.
  /** @type {{tools: Tool[]}} */
  const { tools } = await conn.sendRequest('tools/list', { sessionId });
  console.log(`tools/list: ${tools.length} tools: ${tools.map((t) => t.name).join(', ')}`);
  check(tools.some((t) => t.name === 'mcp__everything__echo'), 'echo is listed as mcp__everything__echo');

  // 6. A tool call: the result is the server's CallToolResult.
  const echo = await conn.sendRequest('tools/call', {
    sessionId,
    name: 'mcp__everything__echo',
    arguments: { message: 'hello from the host' },
  });
  console.log(`echo: ${JSON.stringify(echo)}`);
  check(echo.content?.[0]?.text === 'Echo: hello from the host', 'echo answers');

  // 7. Progress: the host's progressToken goes in meta; $/progress comes back.
  const long = await conn.sendRequest('tools/call', {
    sessionId,
    name: 'mcp__everything__trigger-long-running-operation',
    arguments: { duration: 1, steps: 4 },
    meta: { progressToken: 'long-1' },
  });
  console.log(`long-running: ${long.content?.[0]?.text}`);
  const mine = progress.filter((p) => p.token === 'long-1');
  check(mine.length === 4 && mine[3].value.progress === 4, 'four $/progress notifications', `${mine.length} received`);

  // 8. Cancellation: vscode-jsonrpc sends $/cancelRequest when the token is
  // cancelled, and still waits for the answer: the sidecar answers -32800.
  const source = new CancellationTokenSource();
  const cancelled = conn.sendRequest(
    'tools/call',
    { sessionId, name: 'mcp__everything__trigger-long-running-operation', arguments: { duration: 30, steps: 30 } },
    source.token,
  );
  setTimeout(() => source.cancel(), 300);
  const started = Date.now();
  try {
    await cancelled;
    check(false, 'cancelled call is rejected', 'it succeeded');
  } catch (err) {
    check(err.code === -32800, 'cancelled call gets -32800', `${err.code} ${err.message} after ${Date.now() - started} ms`);
  }

  // 9. Shut down: note the server's pid first, to check that it is gone after.
  const status = await conn.sendRequest('servers/status', { sessionId });
  const pids = status.servers.map((s) => s.pid).filter(Boolean);
  console.log(`servers/status: ${status.servers.map((s) => `${s.name} ${s.state} pid ${s.pid}`).join('; ')}`);
  check(pids.length === 1, 'the stdio server has a pid');
  await conn.sendRequest('shutdown');
  await conn.sendNotification('exit');
  const { code, signal } = await exited;
  check(code === 0, 'sidecar exits 0 after shutdown + exit', `code ${code} signal ${signal}`);
  for (const pid of pids) check(await gone(pid), `server process ${pid} is gone`);
} catch (err) {
  check(false, 'unexpected error', err?.stack ?? String(err));
} finally {
  conn.dispose();
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);

/** Waits up to timeoutMs for a process to end; true when it has. */
async function gone(pid, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** Whether a process still runs (a zombie counts as gone). */
function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX] /.test(stat);
  } catch {
    return true; // no /proc: kill(0) said it exists
  }
}
