// Bad input and faults: the sidecar against misbehaving stdio servers
// (fixtures/raw-server.mjs, raw newline-delimited JSON, no SDK). Each case
// checks the error the host receives, and that the sidecar keeps serving the
// well-behaved server of the same session.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { SidecarHost, rpcError, waitGone } from '../lib/host.mjs';
import { stdioServer } from '../lib/servers.mjs';

const rawServer = fileURLToPath(new URL('../fixtures/raw-server.mjs', import.meta.url));
const raw = (mode, extra = {}) => stdioServer(rawServer, [mode], extra);

test('misbehaving servers: clear errors, and the other servers keep being served', async (t) => {
  const h = new SidecarHost({
    servers: {
      good: raw('good'),
      banner: raw('banner'),
      unknownid: raw('unknown-id'),
      oversized: raw('oversized'),
      exits: raw('exit-after-init'),
      silent: raw('silent-list', { startup_timeout_sec: 2 }),
    },
  }).start();
  const call = (server, tool, args) => rpcError(h.request('tools/call', { sessionId, server, tool, arguments: args }));
  const goodStillServes = async () => {
    const r = await call('good', 'echo', { text: 'still here' });
    assert.deepEqual(r, { ok: true, value: { content: [{ type: 'text', text: 'still here' }] } });
  };
  let sessionId;
  try {
    await h.initialize();
    const { session, complete } = await h.openSession();
    sessionId = session.sessionId;
    const pids = await h.serverPids(sessionId);

    await t.test('startup round: the healthy ones ready, the broken ones failed with a reason', () => {
      assert.deepEqual([...complete.ready].sort(), ['banner', 'good', 'oversized', 'unknownid']);
      const failed = Object.fromEntries(complete.failed.map((f) => [f.server, f.error]));
      assert.deepEqual(Object.keys(failed).sort(), ['exits', 'silent']);
      assert.match(failed.exits, /exit/, failed.exits);
      assert.match(failed.silent, /startup_timeout_sec/, failed.silent);
    });

    await t.test('progress sent just before the response reaches the host before the result', async () => {
      for (const token of ['p-1', 42]) {
        const r = await rpcError(h.request('tools/call', { sessionId, server: 'good', tool: 'progress', arguments: { n: 5 }, meta: { progressToken: token } }));
        // Recorded when the result resolved: every progress must precede it.
        const got = h.all('$/progress', (p) => p.token === token).map((p) => p.value.progress);
        assert.equal(r.ok, true, JSON.stringify(r));
        assert.deepEqual(got, [1, 2, 3, 4, 5], `progress for token ${JSON.stringify(token)}`);
      }
    });

    await t.test('a banner line on stdout is skipped and reported, not fatal', async () => {
      assert.deepEqual(await call('banner', 'echo', { text: 'b' }), { ok: true, value: { content: [{ type: 'text', text: 'b' }] } });
      const logs = h.all('mcp/log', (p) => p.server === 'banner').map((p) => JSON.stringify(p.data));
      assert.ok(logs.some((l) => l.includes('Welcome to the raw server')), `mcp/log of banner: ${logs.join(' | ')}`);
    });

    await t.test('a response with an unknown id is ignored; the real answer arrives', async () => {
      for (const text of ['u1', 'u2']) {
        assert.deepEqual(await call('unknownid', 'echo', { text }), { ok: true, value: { content: [{ type: 'text', text }] } });
      }
      await goodStillServes();
    });

    await t.test('an oversized line fails the call with -32015 naming the limit', async () => {
      const r = await call('oversized', 'big', {});
      assert.equal(r.ok, false);
      assert.equal(r.code, -32015, r.message);
      assert.match(r.message, /line too long|more than \d+ bytes/, r.message);
      assert.equal(r.data.server, 'oversized');
      assert.equal(r.data.retryable, true);
      const next = await call('oversized', 'echo', { text: 'o' });
      assert.ok(next.ok || [-32011, -32015].includes(next.code), `after the fault: ${JSON.stringify(next)}`);
      await goodStillServes();
    });

    await t.test('a server that exits after initialize: -32011 with the reason', async () => {
      const r = await call('exits', 'echo', { text: 'e' });
      assert.equal(r.code, -32011, r.message);
      assert.match(r.message, /exit/);
      assert.equal(r.data.server, 'exits');
      await goodStillServes();
    });

    await t.test('a server that never answers tools/list: -32012 naming startup_timeout_sec', async () => {
      const r = await call('silent', 'echo', { text: 's' });
      assert.equal(r.code, -32012, r.message);
      assert.match(r.message, /startup_timeout_sec/);
      assert.equal(r.data.server, 'silent');
      await goodStillServes();
    });

    await t.test('the healthy server kept its one process; clean shutdown leaves none', async () => {
      const status = await h.request('servers/status', { sessionId });
      const good = status.servers.find((s) => s.name === 'good');
      assert.equal(good.state, 'ready');
      assert.equal(good.restarts, 0);
      assert.ok(pids.includes(good.pid));
      const { code } = await h.shutdown();
      assert.equal(code, 0);
      assert.deepEqual(await waitGone(pids), []);
    });
  } finally {
    h.kill();
  }
});

test('host-side bad input: unknown method, bad params, request before initialize', async () => {
  const h = new SidecarHost({ servers: {} }).start();
  try {
    const early = await rpcError(h.request('tools/list', { sessionId: 'x' }));
    assert.equal(early.code, -32002, early.message);
    await h.initialize();
    const unknown = await rpcError(h.request('no/such/method', {}));
    assert.equal(unknown.code, -32601, unknown.message);
    const bad = await rpcError(h.request('tools/call', { sessionId: 42 }));
    assert.equal(bad.code, -32602, bad.message);
    const { code } = await h.shutdown();
    assert.equal(code, 0);
  } finally {
    h.kill();
  }
});
