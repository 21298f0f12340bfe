// Tests of the client against the real sidecar binary ($MCP_SIDECAR_BIN;
// run.sh builds it) and real MCP servers: the example server the binary
// embeds, and server-everything for roots and sampling.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { PROTOCOL_VERSION, SidecarClient, SidecarError, sidecarBinary } from '../dist/index.js';

const binary = process.env.MCP_SIDECAR_BIN;
assert.ok(binary, 'set MCP_SIDECAR_BIN to the mcp-sidecar binary (run.sh does)');

const require = createRequire(import.meta.url);
const everything = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');

/** Starts a sidecar with the example server (and more servers) configured, and a session. */
async function withSession(t, { servers = {}, capabilities = {}, handlers = () => {} } = {}) {
  const client = await SidecarClient.start({ binary, stderr: 'ignore' });
  t.after(() => client.dispose());
  const events = [];
  client.onNotification('mcp/startupStatus', (p) => events.push(['mcp/startupStatus', p]));
  client.onNotification('mcp/startupComplete', (p) => events.push(['mcp/startupComplete', p]));
  const roundZero = new Promise((resolve) =>
    client.onNotification('mcp/startupComplete', (p) => {
      if (p.round === 0) resolve(p);
    }),
  );
  handlers(client);
  const init = await client.initialize({
    clientInfo: { name: 'client-test', version: '1' },
    capabilities,
    cacheDir: mkdtempSync(path.join(os.tmpdir(), 'sidecar-cache-')),
    servers: { example: { command: binary, args: ['example-server'] }, ...servers },
  });
  const { sessionId } = await client.openSession({ startup: 'eager' });
  const complete = await roundZero;
  return { client, init, sessionId, complete, events };
}

test('initialize, a session, its catalog and a call, all typed', async (t) => {
  const { client, init, sessionId, complete, events } = await withSession(t);
  assert.equal(init.protocolVersion, PROTOCOL_VERSION);
  assert.equal(init.serverInfo.name, 'mcp-sidecar');
  assert.deepEqual(init.servers, ['example']);
  assert.deepEqual(complete.ready, ['example']);
  // Every starting of the round before any terminal status, then the
  // summary: two handlers of mcp/startupComplete both ran.
  assert.deepEqual(
    events.map(([m, p]) => `${m} ${p.status ?? p.round}`),
    ['mcp/startupStatus starting', 'mcp/startupStatus ready', 'mcp/startupComplete 0'],
  );

  const list = await client.listTools(sessionId);
  const add = list.tools.find((tool) => tool.name === 'mcp__example__add');
  assert.ok(add, `add is listed: ${list.tools.map((x) => x.name)}`);
  assert.equal(add.tool, 'add');
  assert.equal(add.server, 'example');
  // The example server gives instructions, which reach the host with its
  // catalog.
  assert.deepEqual(
    list.servers.map(({ instructions, ...server }) => server),
    [{ name: 'example', state: 'ready', catalog: 'live' }],
  );
  assert.match(list.servers[0].instructions, /^A demonstration server/);

  const result = await client.callTool({ sessionId, name: 'mcp__example__add', arguments: { a: 2, b: 40 } });
  assert.deepEqual(result.structuredContent, { sum: 42 });
  assert.deepEqual(result.content, [{ type: 'text', text: '42' }]);
});

test('progress arrives in order, before the answer', async (t) => {
  const { client, sessionId } = await withSession(t);
  const progress = [];
  client.onNotification('$/progress', (p) => progress.push(p));
  const result = await client.callTool({
    sessionId,
    name: 'mcp__example__slow',
    arguments: { seconds: 0.2, steps: 3 },
    meta: { progressToken: 'p-1' },
  });
  assert.match(result.content[0].text, /done: 3 steps/);
  assert.deepEqual(
    progress.map((p) => [p.token, p.value.progress, p.value.total]),
    [
      ['p-1', 1, 3],
      ['p-1', 2, 3],
      ['p-1', 3, 3],
    ],
  );
});

test('an AbortSignal cancels a call: $/cancelRequest, then SidecarError cancelled', async (t) => {
  const { client, sessionId } = await withSession(t);
  const controller = new AbortController();
  // The slow tool reports progress after its first step: abort then.
  client.onNotification('$/progress', (p) => {
    if (p.token === 'to-abort') controller.abort();
  });
  const started = Date.now();
  await assert.rejects(
    client.callTool(
      { sessionId, name: 'mcp__example__slow', arguments: { seconds: 60, steps: 600 }, meta: { progressToken: 'to-abort' } },
      { signal: controller.signal },
    ),
    (err) => {
      assert.ok(err instanceof SidecarError, String(err));
      assert.equal(err.code, -32800);
      assert.equal(err.kind, 'cancelled');
      assert.equal(err.method, 'tools/call');
      return true;
    },
  );
  assert.ok(Date.now() - started < 30_000, 'the call ended long before the tool would have');

  // A signal aborted already: nothing is sent, the connection goes on.
  await assert.rejects(client.callTool({ sessionId, name: 'mcp__example__echo', arguments: { text: 'x' } }, { signal: AbortSignal.abort() }), (err) => err.kind === 'cancelled');
  const echo = await client.callTool({ sessionId, name: 'mcp__example__echo', arguments: { text: 'still here' } });
  assert.equal(echo.content[0].text, 'still here');
});

test('errors carry code, kind and retryable', async (t) => {
  const { client, sessionId } = await withSession(t);
  await assert.rejects(client.callTool({ sessionId, name: 'mcp__example__nope' }), (err) => {
    assert.ok(err instanceof SidecarError);
    assert.equal(err.code, -32013);
    assert.equal(err.kind, 'unknown_tool');
    assert.equal(err.retryable, false);
    return true;
  });
  await assert.rejects(client.listTools('no-such-session'), (err) => err.kind === 'unknown_session' && err.code === -32001);
});

test('onElicit answers a server, and its signal aborts when the server gives up', async (t) => {
  let asked;
  let abortedSeen;
  let waiting;
  const aborted = new Promise((resolve) => (abortedSeen = resolve));
  const neverAnsweredAsked = new Promise((resolve) => (waiting = resolve));
  const { client, sessionId } = await withSession(t, {
    capabilities: { elicitation: true },
    handlers: (c) =>
      c.onElicit(async (params, signal) => {
        asked = params;
        if (params.params.message === 'never answered') {
          waiting();
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          abortedSeen(signal.aborted);
          return { action: 'cancel' };
        }
        return { action: 'accept', content: { answer: 'blue' } };
      }),
  });
  const result = await client.callTool({ sessionId, name: 'mcp__example__ask', arguments: { question: 'Favourite colour?' } });
  assert.equal(result.content[0].text, 'blue');
  assert.equal(asked.server, 'example');
  assert.equal(asked.sessionId, sessionId);
  assert.equal(asked.params.message, 'Favourite colour?');

  // The host cancels the call; the server cancels its elicitation; the
  // sidecar tells the host, whose handler's signal aborts.
  const controller = new AbortController();
  const call = client.callTool({ sessionId, name: 'mcp__example__ask', arguments: { question: 'never answered' } }, { signal: controller.signal });
  await neverAnsweredAsked;
  controller.abort();
  await assert.rejects(call, (err) => err.kind === 'cancelled');
  assert.equal(await aborted, true);
});

test('onRoots and onSample answer server-everything', async (t) => {
  const { client, sessionId, complete } = await withSession(t, {
    servers: { everything: { command: process.execPath, args: [everything, 'stdio'] } },
    capabilities: { roots: true, sampling: {} },
    handlers: (c) => {
      c.onRoots((params) => {
        assert.equal(params.sessionId !== undefined, true);
        return { roots: [{ uri: 'file:///home/alice/proj', name: 'proj' }] };
      });
      c.onSample((params) => {
        assert.equal(params.server, 'everything');
        assert.match(params.params.messages[0].content.text, /say hi/);
        return { role: 'assistant', content: { type: 'text', text: 'Hi from the host model' }, model: 'host-model', stopReason: 'endTurn' };
      });
    },
  });
  assert.deepEqual(complete.failed, []);
  const roots = await client.callTool({ sessionId, name: 'mcp__everything__get-roots-list', arguments: {} });
  assert.match(JSON.stringify(roots.content), /file:\/\/\/home\/alice\/proj/);
  const sample = await client.callTool({ sessionId, name: 'mcp__everything__trigger-sampling-request', arguments: { prompt: 'say hi' } });
  assert.match(JSON.stringify(sample.content), /Hi from the host model/);
});

test('onInput answers mcp/input: a server of a VS Code file that uses ${input:ID} comes up with the answer', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sidecar-inputs-'));
  const file = path.join(dir, 'mcp.json');
  writeFileSync(
    file,
    JSON.stringify({
      inputs: [{ type: 'promptString', id: 'token', description: 'API token', password: true }],
      servers: { everything: { type: 'stdio', command: process.execPath, args: [everything, 'stdio'], env: { INPUT_TOKEN: '${input:token}' } } },
    }),
  );
  const client = await SidecarClient.start({ binary, stderr: 'ignore' });
  t.after(() => client.dispose());
  const asked = [];
  client.onInput((params) => {
    asked.push(params);
    return { value: 'tok-from-the-host' };
  });
  const roundZero = new Promise((resolve) =>
    client.onNotification('mcp/startupComplete', (p) => {
      if (p.round === 0) resolve(p);
    }),
  );
  await client.initialize({
    clientInfo: { name: 'client-test', version: '1' },
    capabilities: { inputs: true },
    cacheDir: mkdtempSync(path.join(os.tmpdir(), 'sidecar-cache-')),
    configFiles: [file],
  });
  const { sessionId } = await client.openSession({ startup: 'eager' });
  const complete = await roundZero;
  assert.deepEqual(complete.ready, ['everything'], JSON.stringify(complete));
  assert.deepEqual(asked, [{ sessionId, server: 'everything', id: 'token', source: file, description: 'API token', password: true }]);
  const env = await client.callTool({ sessionId, name: 'mcp__everything__get-env', arguments: {} });
  assert.equal(JSON.parse(env.text()).INPUT_TOKEN, 'tok-from-the-host');
});

test('dispose shuts down, exits 0 and leaves no server process', async () => {
  const client = await SidecarClient.start({ binary, stderr: 'ignore' });
  await client.initialize({ servers: { example: { command: binary, args: ['example-server'] } } });
  const { sessionId } = await client.openSession({ startup: 'eager' });
  await client.listTools(sessionId); // waits for the startup
  const status = await client.request('servers/status', { sessionId });
  const pid = status.servers[0].pid;
  assert.ok(pid > 0);
  const exit = await client.dispose();
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.equal(alive(pid), false, `server process ${pid} is gone`);
  // A second dispose is the same promise's answer.
  assert.deepEqual(await client.dispose(), exit);
});

test('a sidecar of another protocol version is refused', async (t) => {
  // A stand-in sidecar that answers initialize with protocol version 2.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-sidecar-'));
  const fake = path.join(dir, 'fake-sidecar.mjs');
  writeFileSync(
    fake,
    `#!${process.execPath}
let buf = Buffer.alloc(0);
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  const end = buf.indexOf('\\r\\n\\r\\n');
  if (end < 0) return;
  const n = Number(/Content-Length: (\\d+)/i.exec(buf.subarray(0, end).toString())[1]);
  if (buf.length < end + 4 + n) return;
  const msg = JSON.parse(buf.subarray(end + 4, end + 4 + n).toString());
  buf = buf.subarray(end + 4 + n);
  const body = JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { serverInfo: { name: 'mcp-sidecar', version: '9.0.0' }, protocolVersion: 2, capabilities: { features: [] }, launcher: { status: 'unavailable' }, servers: [] } });
  process.stdout.write('Content-Length: ' + Buffer.byteLength(body) + '\\r\\n\\r\\n' + body);
});
process.stdin.on('end', () => process.exit(0));
`,
  );
  chmodSync(fake, 0o755);
  const client = await SidecarClient.start({ binary: fake, stderr: 'ignore' });
  t.after(() => client.dispose(2000));
  await assert.rejects(client.initialize({}), /protocol version 2; this client speaks 1/);
});

test('start rejects when the binary cannot run', async () => {
  await assert.rejects(SidecarClient.start({ binary: path.join(os.tmpdir(), 'no-such-mcp-sidecar') }), /ENOENT/);
});

test('sidecarBinary: MCP_SIDECAR_BIN first, then the platform package, with errors that say what to do', () => {
  const saved = process.env.MCP_SIDECAR_BIN;
  try {
    process.env.MCP_SIDECAR_BIN = '/opt/mcp-sidecar';
    assert.equal(sidecarBinary(), '/opt/mcp-sidecar');
    delete process.env.MCP_SIDECAR_BIN;
    assert.throws(() => sidecarBinary('plan9', 'mips'), /no binary for plan9-mips/);
    // The development tree installs no platform package.
    assert.throws(() => sidecarBinary('linux', 'x64'), /mcp-sidecar-linux-x64 is not installed/);
  } finally {
    process.env.MCP_SIDECAR_BIN = saved;
  }
});

/** Whether a process still runs (a zombie counts as gone). */
function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}
