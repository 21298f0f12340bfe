// The typed results and the helpers against the real sidecar binary
// ($MCP_SIDECAR_BIN): the example server the binary embeds, and the
// clients' test server (clients/testdata/mcp-test-server.mjs) for every
// kind of content, tasks, subscriptions and URL elicitation.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { SidecarClient, isKnownContentBlock, isKnownElicitRequestParams, toolResultText } from '../dist/index.js';

const binary = process.env.MCP_SIDECAR_BIN;
assert.ok(binary, 'set MCP_SIDECAR_BIN to the mcp-sidecar binary (run.sh does)');
const testServer = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'testdata', 'mcp-test-server.mjs');

/** A sidecar with the example server and the test server ("t"), a session, round 0 done. */
async function withSession(t, { capabilities = {}, handlers = () => {} } = {}) {
  const client = await SidecarClient.start({ binary, stderr: 'ignore' });
  t.after(() => client.dispose());
  const roundZero = new Promise((resolve) =>
    client.onNotification('mcp/startupComplete', (p) => {
      if (p.round === 0) resolve(p);
    }),
  );
  handlers(client);
  await client.initialize({
    capabilities,
    cacheDir: mkdtempSync(path.join(os.tmpdir(), 'sidecar-cache-')),
    servers: {
      example: { command: binary, args: ['example-server'] },
      t: { command: process.execPath, args: [testServer] },
    },
  });
  const { sessionId } = await client.openSession({ startup: 'eager' });
  const complete = await roundZero;
  assert.deepEqual(complete.ready.sort(), ['example', 't']);
  return { client, sessionId };
}

test('content blocks: each kind typed, a later kind as received, text() and structured()', async (t) => {
  const { client, sessionId } = await withSession(t);
  const result = await client.callTool({ sessionId, name: 'mcp__t__blocks' });
  const seen = [];
  for (const block of result.content ?? []) {
    if (!isKnownContentBlock(block)) {
      seen.push(`unknown ${block.type}`);
      continue;
    }
    switch (block.type) {
      case 'text':
        seen.push(`text ${block.text}`);
        break;
      case 'image':
      case 'audio':
        seen.push(`${block.type} ${block.mimeType}`);
        break;
      case 'resource_link':
        seen.push(`link ${block.name} ${block.size}`);
        break;
      case 'resource':
        seen.push(`resource ${'text' in block.resource ? block.resource.text : block.resource.blob}`);
        break;
    }
  }
  assert.deepEqual(seen, [
    'text first line',
    'image image/png',
    'audio audio/wav',
    'link report.md 2048',
    'resource embedded text',
    'resource AAEC',
    'unknown video',
    'text second line',
  ]);
  assert.equal(result.text(), 'first line\nsecond line');
  assert.equal(toolResultText(result), 'first line\nsecond line');
  assert.deepEqual(result.structured(), { kinds: 8 });
  // The helpers are not members: the result is the server's, as sent.
  const raw = await client.request('tools/call', { sessionId, name: 'mcp__t__blocks' });
  assert.deepStrictEqual(result, raw);
  assert.equal(JSON.stringify(result), JSON.stringify(raw));
  assert.deepEqual(Object.keys(result), ['content', 'structuredContent']);
});

test('searchTools, getTools and listTools without schemas', async (t) => {
  const { client, sessionId } = await withSession(t);
  const { results } = await client.searchTools(sessionId, 'add up two numbers', { limit: 2 });
  assert.equal(results.length, 2);
  assert.equal(results[0].name, 'mcp__example__add');
  const only = await client.searchTools(sessionId, '/^mcp__t__/', { servers: ['t'] });
  assert.deepEqual(
    only.results.map((r) => r.tool),
    ['blocks', 'research', 'touch', 'ask_url'], // catalog order
  );

  const summary = await client.listTools(sessionId, { schemas: false, servers: ['example'] });
  assert.ok(summary.tools.length > 0);
  for (const tool of summary.tools) {
    assert.equal(tool.inputSchema, undefined, tool.name);
    assert.ok(tool.inputSchemaBytes > 0 && tool.tokens > 0, `${tool.name}: ${tool.inputSchemaBytes} bytes, ${tool.tokens} tokens`);
  }
  const { tools, missing } = await client.getTools(sessionId, ['mcp__example__add', 'mcp__example__gone']);
  assert.deepEqual(tools.map((x) => x.name), ['mcp__example__add']);
  assert.equal(tools[0].inputSchema.type, 'object');
  assert.deepEqual(missing, ['mcp__example__gone']);
  // The server list as an array, as before.
  const full = await client.listTools(sessionId, ['t']);
  assert.deepEqual(full.servers.map((s) => s.name), ['t']);
  assert.ok(full.tools.every((x) => x.inputSchema !== undefined));
});

test('tasks: callTool with task, onTaskStatus, getTask, taskResult, listTasks, cancelTask', async (t) => {
  const { client, sessionId } = await withSession(t);
  const statuses = [];
  let completed;
  const done = new Promise((resolve) => (completed = resolve));
  client.onTaskStatus((task, params) => {
    statuses.push(`${params.server} ${task.taskId} ${task.status}`);
    if (task.status === 'completed') completed(task);
  });
  const created = await client.callTool({ sessionId, name: 'mcp__t__research', arguments: { topic: 'tides' }, task: { ttl: 30000 } });
  assert.equal(created.task.status, 'working');
  assert.equal(created.task.ttl, 30000);
  assert.equal(typeof created.text, 'undefined', 'a CreateTaskResult has no ToolResult helpers');
  const { taskId } = created.task;
  const last = await done;
  assert.equal(last.statusMessage, 'done');
  assert.deepEqual(statuses, [`t ${taskId} completed`]);

  const task = { sessionId, server: 't', taskId };
  assert.equal((await client.getTask(task)).status, 'completed');
  const result = await client.taskResult(task);
  assert.equal(result.text(), '# Report: tides');
  assert.deepEqual(result.structured(), { topic: 'tides' });

  const slow = await client.callTool({ sessionId, name: 'mcp__t__research', arguments: { topic: 'never' }, task: {} });
  const list = await client.listTasks({ sessionId, server: 't' });
  assert.deepEqual(
    list.tasks.map((x) => [x.taskId, x.status]),
    [
      [taskId, 'completed'],
      [slow.task.taskId, 'working'],
    ],
  );
  const cancelled = await client.cancelTask({ sessionId, server: 't', taskId: slow.task.taskId });
  assert.equal(cancelled.status, 'cancelled');
});

test('subscribeResource: updates reach the listener until the last unsubscribe', async (t) => {
  const { client, sessionId } = await withSession(t);
  const uri = 'file:///tmp/watched.md';
  const touch = async () => (await client.callTool({ sessionId, name: 'mcp__t__touch', arguments: { uri } })).text();
  /** A listener that records updates, and waits for the nth. */
  const recorder = () => {
    const got = [];
    const waiting = [];
    return {
      got,
      listener: (u) => {
        got.push(u.uri);
        for (const w of waiting.filter((x) => got.length >= x.n)) w.resolve();
      },
      nth: (n) => new Promise((resolve) => (got.length >= n ? resolve() : waiting.push({ n, resolve }))),
    };
  };
  const first = recorder();
  const second = recorder();
  const a = await client.subscribeResource({ sessionId, server: 't', uri }, first.listener);
  const b = await client.subscribeResource({ sessionId, server: 't', uri }, second.listener);
  assert.equal(await touch(), '1 subscribed');
  await Promise.all([first.nth(1), second.nth(1)]);

  // One of the two ends: the sidecar keeps the subscription for the other.
  await a.unsubscribe();
  await a.unsubscribe();
  assert.equal(await touch(), '1 subscribed');
  await second.nth(2);
  // Both listeners get the same notification at once: the first had it if
  // it still listened.
  assert.deepEqual([first.got, second.got], [[uri], [uri, uri]]);
  // The last one ends it on the server too.
  await b.unsubscribe();
  assert.equal(await touch(), '0 subscribed');
});

test('onElicit gets the URL elicitation typed', async (t) => {
  const asked = [];
  const { client, sessionId } = await withSession(t, {
    capabilities: { elicitation: { form: {}, url: {} } },
    handlers: (c) =>
      c.onElicit(({ params }) => {
        if (!isKnownElicitRequestParams(params)) return { action: 'decline' };
        if (params.mode === 'url') {
          asked.push([params.message, params.elicitationId, params.url]);
          return { action: 'accept' };
        }
        return { action: 'accept', content: Object.fromEntries(Object.keys(params.requestedSchema.properties).map((k) => [k, 'x'])) };
      }),
  });
  const result = await client.callTool({ sessionId, name: 'mcp__t__ask_url' });
  assert.equal(result.text(), 'accept');
  assert.deepEqual(asked, [['Authorize the payment', 'e-42', 'https://example.com/consent?e=42']]);
  const form = await client.callTool({ sessionId, name: 'mcp__example__ask', arguments: { question: 'Colour?' } });
  assert.equal(form.text(), 'x');
});
