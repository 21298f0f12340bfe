// server-filesystem on a temp folder and server-memory with its file in a
// temp folder, through the sidecar, compared with a direct SDK client.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { SidecarHost, baseEnv, waitGone } from '../lib/host.mjs';
import { DirectClient, filesystemScript, memoryScript, stdioServer, tempDir } from '../lib/servers.mjs';
import { assertSameJSON } from '../lib/compare.mjs';

/** Checks the sidecar's catalog of server against a direct client's. */
async function assertSameCatalog(h, sessionId, server, cfg) {
  const direct = await DirectClient.connect({ ...cfg, env: { ...baseEnv(), ...(cfg.env ?? {}) } });
  try {
    const want = (await direct.rawRequest('tools/list', {}, ListToolsResultSchema)).tools;
    const got = (await h.request('tools/list', { sessionId, servers: [server] })).tools;
    assert.deepEqual(got.map((t) => t.tool), want.map((t) => t.name));
    for (const [i, w] of want.entries()) {
      assert.equal(got[i].name, `mcp__${server}__${w.name}`);
      for (const k of ['title', 'description', 'inputSchema', 'outputSchema', 'annotations', '_meta']) {
        assertSameJSON(got[i][k], w[k], `${w.name}: ${k}`);
      }
    }
    return want.length;
  } finally {
    await direct.close();
  }
}

test('filesystem and memory: catalogs, write then read a file, create entities then read the graph, clean shutdown', async (t) => {
  const root = tempDir('fs');
  const memDir = tempDir('memory');
  const memoryFile = path.join(memDir, 'memory.jsonl');
  writeFileSync(path.join(root, 'seed.txt'), 'seed\n');
  const fsCfg = stdioServer(filesystemScript(), [root]);
  const memCfg = stdioServer(memoryScript(), [], { env: { MEMORY_FILE_PATH: memoryFile } });
  const h = new SidecarHost({ servers: { fs: fsCfg, memory: memCfg } }).start();
  try {
    await h.initialize();
    const { session, complete } = await h.openSession();
    const sessionId = session.sessionId;
    assert.deepEqual([...complete.ready].sort(), ['fs', 'memory']);

    await t.test('filesystem catalog is the one the server publishes', async () => {
      const n = await assertSameCatalog(h, sessionId, 'fs', fsCfg);
      assert.ok(n >= 10, `${n} filesystem tools`);
    });
    await t.test('memory catalog is the one the server publishes', async () => {
      const n = await assertSameCatalog(h, sessionId, 'memory', memCfg);
      assert.ok(n >= 9, `${n} memory tools`);
    });

    await t.test('filesystem: write a file, then read it back', async () => {
      const file = path.join(root, 'notes', 'hello.txt');
      const text = 'Hello from the sidecar\nline 2 — ünïcödé\n';
      await h.request('tools/call', { sessionId, name: 'mcp__fs__create_directory', arguments: { path: path.dirname(file) } });
      const w = await h.request('tools/call', { sessionId, name: 'mcp__fs__write_file', arguments: { path: file, content: text } });
      assert.notEqual(w.isError, true, JSON.stringify(w));
      assert.equal(readFileSync(file, 'utf8'), text, 'the file on disk');
      const r = await h.request('tools/call', { sessionId, name: 'mcp__fs__read_text_file', arguments: { path: file } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
      assert.equal(r.content[0].text, text);
      const outside = await h.request('tools/call', { sessionId, name: 'mcp__fs__read_text_file', arguments: { path: '/etc/hostname' } });
      assert.equal(outside.isError, true, 'a path outside the allowed folder is a tool error, not a protocol error');
    });

    await t.test('memory: create entities and a relation, then read the graph', async () => {
      const entities = [
        { name: 'Ada', entityType: 'person', observations: ['wrote the first program'] },
        { name: 'Analytical Engine', entityType: 'machine', observations: ['designed by Babbage'] },
      ];
      const c = await h.request('tools/call', { sessionId, name: 'mcp__memory__create_entities', arguments: { entities } });
      assert.notEqual(c.isError, true, JSON.stringify(c));
      await h.request('tools/call', {
        sessionId,
        name: 'mcp__memory__create_relations',
        arguments: { relations: [{ from: 'Ada', to: 'Analytical Engine', relationType: 'programmed' }] },
      });
      const g = await h.request('tools/call', { sessionId, name: 'mcp__memory__read_graph', arguments: {} });
      const graph = g.structuredContent ?? JSON.parse(g.content[0].text);
      assert.deepEqual(graph.entities.map((e) => e.name).sort(), ['Ada', 'Analytical Engine']);
      assert.deepEqual(graph.relations, [{ from: 'Ada', to: 'Analytical Engine', relationType: 'programmed' }]);
      assert.match(readFileSync(memoryFile, 'utf8'), /Analytical Engine/, 'the server wrote MEMORY_FILE_PATH');
    });

    await t.test('clean shutdown: no process left', async () => {
      const pids = await h.serverPids(sessionId);
      assert.equal(pids.length, 2);
      const { code } = await h.shutdown();
      assert.equal(code, 0);
      assert.deepEqual(await waitGone(pids), []);
    });
  } finally {
    h.kill();
  }
});
