// The rest of MCP's client side through the sidecar, against
// server-everything over stdio and Streamable HTTP: sampling answered by
// the host, URL elicitation (request path and the -32042 error path),
// resource subscriptions, and tasks (a research task created, followed to
// completion, its result fetched; input_required answered through
// elicitation). Each needs a capability the host declares, and the server
// registers the tools that use it only for a client that has it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SidecarHost, rpcError } from '../lib/host.mjs';
import { everythingScript, startEverythingHTTP, stdioServer } from '../lib/servers.mjs';

const SERVER = 'everything';
const DOC = 'demo://resource/static/document/architecture.md';
const NOTE = 'demo://resource/static/document/features.md';

const sampled = {
  role: 'assistant',
  content: { type: 'text', text: 'A haiku from the host <&> é' },
  model: 'host-model-1',
  stopReason: 'endTurn',
};

for (const transport of ['stdio', 'http']) {
  describe(`client features over ${transport}`, () => {
    /** @type {SidecarHost} */ let h;
    let httpServer;
    let sessionId;
    /** What the host answers to form elicitations, by test. */
    let formAnswer = () => ({ action: 'decline' });

    before(async () => {
      let cfg = stdioServer(everythingScript(), ['stdio']);
      if (transport === 'http') {
        httpServer = await startEverythingHTTP();
        cfg = { url: httpServer.url };
      }
      h = new SidecarHost({
        servers: { [SERVER]: cfg },
        capabilities: { elicitation: { form: {}, url: {} }, sampling: {} },
        features: { mcp_tool_list_changed: true },
        onSample: () => sampled,
        onElicit: (p) => (p.params.mode === 'url' ? { action: 'accept' } : formAnswer(p)),
      }).start();
      await h.initialize();
      const { session, complete } = await h.openSession();
      assert.deepEqual(complete.ready, [SERVER], JSON.stringify(complete));
      sessionId = session.sessionId;
    });

    after(async () => {
      h?.kill();
      await httpServer?.stop();
    });

    const call = (tool, args, extra = {}) => h.request('tools/call', { sessionId, server: SERVER, tool, arguments: args, ...extra });

    test('the tools for the declared capabilities are listed', async () => {
      const { tools } = await h.request('tools/list', { sessionId });
      const names = tools.map((t) => t.tool);
      for (const name of ['trigger-sampling-request', 'trigger-url-elicitation', 'simulate-research-query']) {
        assert.ok(names.includes(name), `${name} listed (got ${names.join(', ')})`);
      }
    });

    test('sampling: the host answers mcp/sample with the server\'s params as sent', async () => {
      const before = h.sampleRequests.length;
      const res = await call('trigger-sampling-request', { prompt: 'write a haiku', maxTokens: 7 });
      assert.match(res.content[0].text, /host-model-1/);
      assert.match(res.content[0].text, /A haiku from the host <&> é/);
      const asked = h.sampleRequests.slice(before);
      assert.equal(asked.length, 1);
      assert.equal(asked[0].sessionId, sessionId);
      assert.equal(asked[0].server, SERVER);
      const p = asked[0].params;
      assert.equal(p.maxTokens, 7);
      assert.equal(p.temperature, 0.7);
      assert.equal(p.systemPrompt, 'You are a helpful test server.');
      assert.match(p.messages[0].content.text, /write a haiku/);
      if (transport === 'stdio') {
        // The server's key order: a decoded and re-encoded request would
        // have the SDK's.
        assert.deepEqual(Object.keys(p), ['messages', 'systemPrompt', 'maxTokens', 'temperature']);
      }
    });

    test('URL elicitation, request path: mcp/elicit with mode url', async () => {
      const before = h.elicitRequests.length;
      const res = await call('trigger-url-elicitation', { url: 'https://example.com/consent', elicitationId: `req-${transport}` });
      assert.match(res.content[0].text, /User completed the URL elicitation flow/);
      const asked = h.elicitRequests.slice(before);
      assert.equal(asked.length, 1);
      assert.deepEqual(asked[0].params, {
        mode: 'url',
        url: 'https://example.com/consent',
        message: 'Please open the link to complete this action.',
        elicitationId: `req-${transport}`,
      });
    });

    test('URL elicitation, error path: -32042 reaches the host with the server\'s data, and the retry succeeds', async () => {
      const args = { url: 'https://example.com/authorize', errorPath: true };
      const err = await rpcError(call('trigger-url-elicitation', args));
      assert.equal(err.ok, false);
      assert.equal(err.code, -32042, err.message);
      assert.equal(err.data.kind, 'server_error');
      assert.equal(err.data.serverCode, -32042);
      const [e] = err.data.serverData.elicitations;
      assert.equal(e.mode, 'url');
      assert.equal(e.url, 'https://modelcontextprotocol.io');
      assert.match(e.message, /satisfy the prerequisite/);
      assert.ok(e.elicitationId);
      // The host opened the URL; the same call again proceeds.
      const res = await call('trigger-url-elicitation', args);
      assert.match(res.content[0].text, /User completed the URL elicitation flow/);
    });

    test('resource subscriptions: updates after subscribing, none after unsubscribing', async () => {
      const updated = (uri) => (p) => p.sessionId === sessionId && p.server === SERVER && p.uri === uri;
      let since = h.events.length;
      assert.deepEqual(await h.request('resources/subscribe', { sessionId, server: SERVER, uri: DOC }), {});
      await call('toggle-subscriber-updates', {}); // on: sends at once, then every 5 s
      await h.waitFor('mcp/resourceUpdated', updated(DOC), { since });
      await call('toggle-subscriber-updates', {}); // off

      assert.deepEqual(await h.request('resources/unsubscribe', { sessionId, server: SERVER, uri: DOC }), {});
      await h.request('resources/subscribe', { sessionId, server: SERVER, uri: NOTE });
      since = h.events.length;
      // On again: the server sends for every subscription in the order
      // they were made, so an update of DOC would come before NOTE's.
      await call('toggle-subscriber-updates', {});
      await h.waitFor('mcp/resourceUpdated', updated(NOTE), { since });
      await call('toggle-subscriber-updates', {});
      assert.deepEqual(h.all('mcp/resourceUpdated', updated(DOC)).length, 1, 'no update of the resource after unsubscribing');
      await h.request('resources/unsubscribe', { sessionId, server: SERVER, uri: NOTE });
    });

    test('tasks: a task-only tool called without task is refused, naming the requirement', async () => {
      const err = await rpcError(call('simulate-research-query', { topic: 'x' }));
      assert.equal(err.code, -32602, err.message);
      assert.match(err.message, /taskSupport is "required"/);
    });

    /** Waits for mcp/taskStatus of taskId with status. */
    const statusOf = (taskId, status, since) =>
      h.waitFor('mcp/taskStatus', (p) => p.sessionId === sessionId && p.server === SERVER && p.params.taskId === taskId && p.params.status === status, {
        since,
      });

    test('tasks: a research task is created, reaches completed, and its result is fetched', async () => {
      const since = h.events.length;
      const created = await call('simulate-research-query', { topic: 'conformance' }, { task: { ttl: 60000 } });
      const { task } = created;
      assert.ok(task?.taskId, JSON.stringify(created));
      assert.equal(task.status, 'working');
      await statusOf(task.taskId, 'completed', since);
      const got = await h.request('tasks/get', { sessionId, server: SERVER, taskId: task.taskId });
      assert.equal(got.taskId, task.taskId);
      assert.equal(got.status, 'completed');
      const listed = await h.request('tasks/list', { sessionId, server: SERVER });
      assert.ok(listed.tasks.some((t) => t.taskId === task.taskId), JSON.stringify(listed));
      const result = await h.request('tasks/result', { sessionId, server: SERVER, taskId: task.taskId });
      assert.match(result.content[0].text, /# Research Report: conformance/);
    });

    test('tasks: input_required is answered through elicitation', async () => {
      // The user picks the second interpretation offered.
      formAnswer = (p) => ({ action: 'accept', content: { interpretation: p.params.requestedSchema.properties.interpretation.oneOf[1].const } });
      const since = h.events.length;
      const { task } = await call('simulate-research-query', { topic: 'python', ambiguous: true }, { task: {} });
      await statusOf(task.taskId, 'input_required', since);
      assert.equal((await h.request('tasks/get', { sessionId, server: SERVER, taskId: task.taskId })).status, 'input_required');
      // The server's question comes through the tasks/result stream.
      const before = h.elicitRequests.length;
      const result = await h.request('tasks/result', { sessionId, server: SERVER, taskId: task.taskId });
      const asked = h.elicitRequests.slice(before);
      assert.equal(asked.length, 1);
      assert.match(asked[0].params.message, /multiple interpretations/);
      assert.match(result.content[0].text, /Clarification\*\*: snake/);
      assert.equal((await h.request('tasks/get', { sessionId, server: SERVER, taskId: task.taskId })).status, 'completed');
    });

    test('tasks: tasks/cancel ends a task', async () => {
      const { task } = await call('simulate-research-query', { topic: 'cancel me' }, { task: {} });
      const cancelled = await h.request('tasks/cancel', { sessionId, server: SERVER, taskId: task.taskId });
      assert.equal(cancelled.status, 'cancelled', JSON.stringify(cancelled));
    });

    test('clean shutdown', async () => {
      const { code } = await h.shutdown();
      assert.equal(code, 0);
    });
  });
}

describe('capabilities the host did not declare', () => {
  test('the tools of undeclared capabilities are not listed', async () => {
    const h = new SidecarHost({ servers: { [SERVER]: stdioServer(everythingScript(), ['stdio']) }, features: { mcp_tool_list_changed: true } }).start();
    try {
      await h.initialize();
      const { session } = await h.openSession();
      const { tools } = await h.request('tools/list', { sessionId: session.sessionId });
      const names = tools.map((t) => t.tool);
      for (const name of ['trigger-sampling-request', 'trigger-url-elicitation', 'trigger-elicitation-request', 'get-roots-list']) {
        assert.ok(!names.includes(name), `${name} listed for a host that does not handle it`);
      }
      const { code } = await h.shutdown();
      assert.equal(code, 0);
    } finally {
      h.kill();
    }
  });
});
