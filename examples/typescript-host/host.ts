// A host of mcp-sidecar as a TypeScript agent harness writes it, on the
// typed client (the npm package mcp-sidecar, from clients/typescript): spawn
// the sidecar, run one MCP server (server-everything) in one session, list
// and call tools, follow progress, cancel a call with an AbortSignal, and
// shut everything down.
//
// Usage: node dist/host.js <path/to/mcp-sidecar>    (or MCP_SIDECAR_BIN=...)
// Exits non-zero if any check fails.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import { SidecarClient, SidecarError, isKnownContentBlock, type ProgressParams, type StartupCompleteParams } from 'mcp-sidecar';

const require = createRequire(import.meta.url);

const sidecarPath = process.argv[2] ?? process.env['MCP_SIDECAR_BIN'];
if (!sidecarPath) {
  console.error('usage: node dist/host.js <path/to/mcp-sidecar>');
  process.exit(2);
}

// The MCP server: server-everything from this example's own node_modules,
// run with this Node (no npx, so its process is the one servers/status shows).
const everything = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

let failures = 0;
/** Records a check; the exit status is non-zero if any failed. */
function check(ok: boolean, what: string, detail = ''): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`);
  if (!ok) failures++;
}

// 1. Spawn the sidecar: stdin/stdout carry the protocol, stderr its logs.
const client = await SidecarClient.start({ binary: path.resolve(sidecarPath) });

// 2. Notifications, typed by method. Register handlers before initialize.
const progress: ProgressParams[] = [];
let resolveComplete!: (p: StartupCompleteParams) => void;
const startupComplete = new Promise<StartupCompleteParams>((r) => (resolveComplete = r));
client.onNotification('mcp/startupStatus', (p) => {
  console.log(`  mcp/startupStatus  ${p.server}: ${p.status}${p.tools !== undefined ? ` (${p.tools} tools)` : ''}${p.error ? ` - ${p.error}` : ''}`);
});
client.onNotification('mcp/startupComplete', (p) => {
  console.log(`  mcp/startupComplete round ${p.round}: ready=${JSON.stringify(p.ready)} failed=${JSON.stringify(p.failed)}`);
  if (p.round === 0) resolveComplete(p);
});
client.onNotification('$/progress', (p) => {
  console.log(`  $/progress ${JSON.stringify(p.token)}: ${p.value.progress}/${p.value.total ?? '?'}`);
  progress.push(p);
});
client.onNotification('mcp/log', (p) => console.log(`  mcp/log [${p.server}] ${p.level}: ${JSON.stringify(p.data).slice(0, 120)}`));
client.onNotification('mcp/toolsChanged', (p) => console.log(`  mcp/toolsChanged ${p.server} (${p.reason})`));
// A server asking the user (elicitation): this host declines.
client.onElicit(() => ({ action: 'decline' }));

try {
  // 3. initialize with inline servers (Codex's config keys); the client
  // checks protocolVersion and sends initialized.
  const init = await client.initialize({
    clientInfo: { name: 'typescript-host-example', version: '1.0.0' },
    capabilities: { elicitation: true },
    servers: { everything: { command: process.execPath, args: [everything, 'stdio'] } },
  });
  console.log(`initialize: ${init.serverInfo.name} ${init.serverInfo.version}, protocol ${init.protocolVersion}, servers ${JSON.stringify(init.servers)}`);
  check(init.servers.includes('everything'), 'initialize lists the server');

  // 4. One session; eager startup reports through the notifications above.
  const { sessionId } = await client.openSession({ startup: 'eager' });
  const complete = await startupComplete;
  check(complete.ready.includes('everything'), 'everything started', JSON.stringify(complete.failed));

  // 5. The catalog: qualified names mcp__<server>__<tool>.
  const { tools } = await client.listTools(sessionId);
  console.log(`tools/list: ${tools.length} tools: ${tools.map((t) => t.name).join(', ')}`);
  check(tools.some((t) => t.name === 'mcp__everything__echo'), 'echo is listed as mcp__everything__echo');

  // 6. A tool call: the result is the server's CallToolResult; text() joins its text blocks.
  const echo = await client.callTool({ sessionId, name: 'mcp__everything__echo', arguments: { message: 'hello from the host' } });
  console.log(`echo: ${JSON.stringify(echo)}`);
  check(echo.text() === 'Echo: hello from the host', 'echo answers');

  // Deferred tools: the catalog without schemas, a search, then the one definition needed.
  const summary = await client.listTools(sessionId, { schemas: false });
  const tokens = summary.tools.reduce((n, t) => n + t.tokens, 0);
  const { results } = await client.searchTools(sessionId, 'tiny image', { limit: 1 });
  const found = results[0]?.name ?? '';
  const { tools: [definition] } = await client.getTools(sessionId, [found]);
  console.log(`deferred: ${summary.tools.length} tools, ~${tokens} tokens with schemas; search "tiny image" -> ${found}`);
  check(found === 'mcp__everything__get-tiny-image' && definition?.inputSchema !== undefined, 'search finds the tool and get gives its schema');

  // Content blocks, typed: narrow with isKnownContentBlock, then switch on type.
  const image = await client.callTool({ sessionId, name: found });
  const kinds: string[] = [];
  for (const block of image.content ?? []) {
    if (!isKnownContentBlock(block)) {
      kinds.push(`a later kind: ${block.type}`);
      continue;
    }
    switch (block.type) {
      case 'text':
        kinds.push(`text (${block.text.length} chars)`);
        break;
      case 'image':
      case 'audio':
        kinds.push(`${block.type} ${block.mimeType}, ${block.data.length} base64 chars`);
        break;
      case 'resource_link':
      case 'resource':
        kinds.push(block.type);
        break;
    }
  }
  console.log(`get-tiny-image: ${kinds.join('; ')}`);
  check(kinds.some((k) => k.startsWith('image image/png')), 'the image comes as an ImageContent');

  // 7. Progress: the host's progressToken goes in meta; $/progress comes back.
  const long = await client.callTool({
    sessionId,
    name: 'mcp__everything__trigger-long-running-operation',
    arguments: { duration: 1, steps: 4 },
    meta: { progressToken: 'long-1' },
  });
  console.log(`long-running: ${JSON.stringify(long.content?.[0])}`);
  const mine = progress.filter((p) => p.token === 'long-1');
  check(mine.length === 4 && mine[3]?.value.progress === 4, 'four $/progress notifications', `${mine.length} received`);

  // 8. Cancellation: aborting the signal sends $/cancelRequest; the sidecar
  // answers -32800 at once.
  const controller = new AbortController();
  const cancelled = client.callTool(
    { sessionId, name: 'mcp__everything__trigger-long-running-operation', arguments: { duration: 30, steps: 30 }, meta: { progressToken: 'long-2' } },
    { signal: controller.signal },
  );
  client.onNotification('$/progress', (p) => {
    if (p.token === 'long-2') controller.abort();
  });
  const started = Date.now();
  try {
    await cancelled;
    check(false, 'cancelled call is rejected', 'it succeeded');
  } catch (err) {
    const e = err as SidecarError;
    check(e instanceof SidecarError && e.code === -32800 && e.kind === 'cancelled', 'cancelled call gets -32800', `${e.code} ${e.message} after ${Date.now() - started} ms`);
  }

  // 9. Shut down: note the server's pid first, to check that it is gone after.
  const status = await client.request('servers/status', { sessionId });
  const pids = status.servers.map((s) => s.pid).filter((pid): pid is number => pid !== undefined);
  console.log(`servers/status: ${status.servers.map((s) => `${s.name} ${s.state} pid ${s.pid}`).join('; ')}`);
  check(pids.length === 1, 'the stdio server has a pid');
  const { code, signal } = await client.dispose();
  check(code === 0, 'sidecar exits 0 after shutdown + exit', `code ${code} signal ${signal}`);
  for (const pid of pids) check(!alive(pid), `server process ${pid} is gone`);
} catch (err) {
  check(false, 'unexpected error', (err as Error)?.stack ?? String(err));
} finally {
  await client.dispose();
}

console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);

/** Whether a process still runs (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: kill(0) said it exists
  }
}
