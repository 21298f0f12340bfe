// server-everything through the sidecar, over stdio and Streamable HTTP,
// compared with a direct @modelcontextprotocol/sdk client in the same run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CallToolResultSchema,
  CompleteResultSchema,
  ElicitRequestSchema,
  GetPromptResultSchema,
  ListPromptsResultSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesResultSchema,
  ListToolsResultSchema,
  ListRootsRequestSchema,
  ReadResourceResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { SidecarHost, baseEnv, rpc, rpcError, waitGone } from '../lib/host.mjs';
import { DirectClient, everythingScript, startEverythingHTTP, stdioServer } from '../lib/servers.mjs';
import { assertSameJSON, assertSameJSONUnordered, mask } from '../lib/compare.mjs';

const SERVER = 'everything';
const qualified = (tool) => `mcp__${SERVER}__${tool}`;

// What the host answers when the server asks for input; the direct client
// answers the same, so both runs of the tool must produce the same result.
const elicitAnswer = {
  action: 'accept',
  content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com', integer: 7, untitledSingleSelectEnum: 'Ross' },
};
const roots = [{ uri: 'file:///tmp/conformance-root', name: 'conformance root' }];

/** A tool result whose "Raw result: {json}" texts are parsed. */
const rawResultParsed = (res) => ({
  ...res,
  content: res.content.map((c) =>
    c.type === 'text' && c.text.startsWith('\nRaw result: ') ? { ...c, text: JSON.parse(c.text.slice('\nRaw result: '.length)) } : c,
  ),
});

// Every tool of server-everything that runs offline, with arguments.
const offlineCalls = [
  ['echo', { message: 'héllo <&> "world"' }],
  ['get-annotated-message', { messageType: 'error', includeImage: true }],
  ['get-annotated-message', { messageType: 'success' }],
  ['get-annotated-message', { messageType: 'debug' }],
  ['get-env', {}],
  ['get-resource-links', { count: 10 }],
  ['get-resource-reference', { resourceType: 'Text', resourceId: 2 }],
  ['get-resource-reference', { resourceType: 'Blob', resourceId: 3 }],
  ['get-structured-content', { location: 'Chicago' }],
  ['get-sum', { a: 12345678901234, b: 0.5 }],
  ['get-tiny-image', {}],
  ['gzip-file-as-resource', { name: 'hello.txt.gz', data: 'data:text/plain;base64,aGVsbG8gd29ybGQ=', outputType: 'resource' }],
  ['gzip-file-as-resource', { name: 'link.txt.gz', data: 'data:text/plain;base64,aGVsbG8gd29ybGQ=', outputType: 'resourceLink' }],
  ['toggle-simulated-logging', {}],
  ['toggle-simulated-logging', {}],
  ['toggle-subscriber-updates', {}],
  ['toggle-subscriber-updates', {}],
  ['trigger-long-running-operation', { duration: 0.2, steps: 2 }],
  ['get-roots-list', {}],
];

for (const transport of ['stdio', 'http']) {
  describe(`server-everything over ${transport}`, () => {
    /** @type {SidecarHost} */ let h;
    /** @type {DirectClient} */ let direct;
    let httpServer;
    let sessionId;
    let serverCfg;
    let directElicits = [];

    before(async () => {
      if (transport === 'http') {
        httpServer = await startEverythingHTTP();
        serverCfg = { url: httpServer.url };
      } else {
        serverCfg = stdioServer(everythingScript(), ['stdio']);
      }
      h = new SidecarHost({
        servers: { [SERVER]: serverCfg },
        capabilities: { elicitation: true, roots: true },
        onElicit: () => elicitAnswer,
        onRoots: () => ({ roots }),
      }).start();
      direct = await DirectClient.connect(
        transport === 'http' ? serverCfg : { ...serverCfg, env: baseEnv() },
        // The sidecar fills in form defaults the host left out (SEP-1034);
        // the SDK client does so only when asked.
        { elicitation: { form: { applyDefaults: true } }, roots: { listChanged: true } },
        {
          requests: [
            [ElicitRequestSchema, (req) => (directElicits.push(req.params), elicitAnswer)],
            [ListRootsRequestSchema, () => ({ roots })],
          ],
        },
      );
    });

    after(async () => {
      h?.kill();
      await direct?.close();
      await httpServer?.stop();
    });

    test('initialize, session/open and startup notifications', async () => {
      const init = await h.initialize();
      assert.equal(init.serverInfo.name, 'mcp-sidecar');
      assert.ok(init.serverInfo.version, 'serverInfo.version is set');
      assert.deepEqual(init.servers, [SERVER]);
      assert.ok(['verified', 'unavailable'].includes(init.launcher.status), `launcher.status ${init.launcher.status}`);
      const { session, complete } = await h.openSession();
      sessionId = session.sessionId;
      assert.ok(sessionId);
      assert.deepEqual(session.servers, [{ name: SERVER, state: 'starting' }]);
      assert.deepEqual(complete, { sessionId, round: 0, ready: [SERVER], failed: [], cancelled: [] });
      const statuses = h.all('mcp/startupStatus', (p) => p.sessionId === sessionId).map((p) => p.status);
      assert.deepEqual(statuses, ['starting', 'ready']);
    });

    test('servers/status reports the server and its capabilities as the server sent them', async () => {
      const st = await h.request('servers/status', { sessionId });
      assert.equal(st.servers.length, 1);
      const s = st.servers[0];
      assert.equal(s.name, SERVER);
      assert.equal(s.state, 'ready');
      assert.equal(s.transport, transport);
      assert.equal(s.restarts, 0);
      if (transport === 'stdio') assert.ok(Number.isInteger(s.pid) && s.pid > 0, `pid ${s.pid}`);
      assert.ok(s.protocolVersion, 'protocolVersion is reported');
      assert.deepEqual(s.capabilities, direct.client.getServerCapabilities());
    });

    test('catalog: exact tool names and schemas as the server publishes them', async (t) => {
      const mine = await h.request('tools/list', { sessionId });
      assert.deepEqual(mine.servers.map((s) => [s.name, s.state, s.catalog, s.error]), [[SERVER, 'ready', 'live', undefined]]);
      const theirs = (await direct.rawRequest('tools/list', {}, ListToolsResultSchema)).tools;
      assert.deepEqual(
        mine.tools.map((x) => x.name),
        theirs.map((x) => qualified(x.name)),
        'same tools, same order, qualified names',
      );
      const dropped = new Set();
      for (const [i, want] of theirs.entries()) {
        const got = mine.tools[i];
        assert.equal(got.server, SERVER);
        assert.equal(got.tool, want.name);
        for (const k of ['title', 'description', 'inputSchema', 'outputSchema', 'annotations', '_meta']) {
          assertSameJSON(got[k], want[k], `${want.name}: ${k}`);
        }
        for (const k of Object.keys(want)) {
          if (!(k in got)) dropped.add(k);
        }
      }
      if (dropped.size) t.diagnostic(`tool fields the sidecar does not forward: ${[...dropped].join(', ')}`);
    });

    // The one variable the sidecar adds to a stdio server's environment
    // (docs/configuration.md, "Environment of stdio servers"): on Linux, a random id per server process,
    // by which its orphans are told apart. Checked, then left out of the
    // comparison with the direct client.
    const withoutMarker = (got) => {
      const env = JSON.parse(got.content[0].text);
      if (process.platform === 'linux') assert.match(env.MCP_SIDECAR_SERVER ?? '', /^[A-Z2-7]{26,}$/, 'MCP_SIDECAR_SERVER');
      delete env.MCP_SIDECAR_SERVER;
      return { ...got, content: [{ ...got.content[0], text: JSON.stringify(env, null, 2) }] };
    };

    for (const [i, [tool, args]] of offlineCalls.entries()) {
      test(`tools/call ${tool} ${JSON.stringify(args)} matches the direct client`, async () => {
        const want = await direct.rawRequest('tools/call', { name: tool, arguments: args }, CallToolResultSchema);
        let got = await h.request('tools/call', { sessionId, name: qualified(tool), arguments: args });
        if (tool === 'get-env' && transport === 'stdio') got = withoutMarker(got);
        assertSameJSON(mask(got), mask(want));
        if (tool === 'get-roots-list') assert.match(JSON.stringify(got), /conformance-root/);
        void i;
      });
    }

    test('tools/call by server + raw tool name', async () => {
      const got = await h.request('tools/call', { sessionId, server: SERVER, tool: 'get-sum', arguments: { a: 2, b: 3 } });
      assert.deepEqual(got, { content: [{ type: 'text', text: 'The sum of 2 and 3 is 5.' }] });
    });

    test('progress from trigger-long-running-operation reaches the host as $/progress, all before the result', async () => {
      // Several short runs: the last progress is sent just before the
      // response, and must not be lost to the response overtaking it.
      for (let run = 0; run < 5; run++) {
        const token = `progress-${transport}-${run}`;
        const got = await h.request('tools/call', {
          sessionId,
          name: qualified('trigger-long-running-operation'),
          arguments: { duration: 0.15, steps: 3 },
          meta: { progressToken: token },
        });
        assert.match(got.content[0].text, /Long running operation completed/);
        // Recorded by the time the result resolved.
        const progress = h.all('$/progress', (p) => p.token === token).map((p) => p.value);
        assert.deepEqual(
          progress,
          [
            { progress: 1, total: 3 },
            { progress: 2, total: 3 },
            { progress: 3, total: 3 },
          ],
          `run ${run}`,
        );
      }
    });

    test('cancellation: the host gets -32800 at once and the sidecar stays healthy', async (t) => {
      const pidsBefore = await h.serverPids(sessionId);
      const token = `cancel-${transport}`;
      const src = new rpc.CancellationTokenSource();
      const duration = 60; // the server ignores cancellation and runs on
      const started = Date.now();
      const call = rpcError(
        h.request(
          'tools/call',
          { sessionId, name: qualified('trigger-long-running-operation'), arguments: { duration, steps: duration }, meta: { progressToken: token } },
          src.token,
        ),
      );
      // The call is in flight at the server once its first progress arrives
      // (progress has its own test: without it, cancel after 5 s anyway).
      const inFlight = await h.waitFor('$/progress', (p) => p.token === token, { timeoutMs: 5000 }).catch(() => null);
      if (!inFlight) t.diagnostic('no $/progress seen before cancelling');
      src.cancel();
      const res = await call;
      const answeredAt = Date.now();
      assert.equal(res.ok, false, 'a cancelled call must not succeed');
      assert.equal(res.code, -32800, `code ${res.code}: ${res.message}`);
      assert.ok(answeredAt - started < (duration * 1000) / 2, 'answered long before the server would finish');
      const since = h.events.length;
      // Still healthy: the same process serves the next call.
      const echo = await h.request('tools/call', { sessionId, name: qualified('echo'), arguments: { message: 'after cancel' } });
      assert.deepEqual(echo, { content: [{ type: 'text', text: 'Echo: after cancel' }] });
      await h.request('tools/call', { sessionId, name: qualified('trigger-long-running-operation'), arguments: { duration: 1.2, steps: 2 } });
      assert.deepEqual(await h.serverPids(sessionId), pidsBefore);
      const late = h.events.slice(since).filter((e) => e.method === '$/progress' && e.params.token === token);
      assert.deepEqual(late, [], 'no $/progress for a call the host saw cancelled');
    });

    test('elicitation: trigger-elicitation-request is answered by the host', async () => {
      const before = h.elicitRequests.length;
      directElicits = [];
      const want = await direct.rawRequest('tools/call', { name: 'trigger-elicitation-request', arguments: {} }, CallToolResultSchema, {
        timeout: 30000,
      });
      const got = await h.request('tools/call', { sessionId, name: qualified('trigger-elicitation-request'), arguments: {} });
      if (transport === 'stdio') {
        assertSameJSON(got, want);
      } else {
        // Over HTTP the sidecar sees go-sdk's decoding of the request, whose
        // schema properties are in sorted order: the defaults it fills in
        // follow that order, and the tool echoes the content it got.
        assertSameJSONUnordered(rawResultParsed(got), rawResultParsed(want));
      }
      assert.match(got.content[0].text, /User provided the requested information/);
      const asked = h.elicitRequests.slice(before);
      assert.equal(asked.length, 1, 'one mcp/elicit request');
      assert.equal(asked[0].sessionId, sessionId);
      assert.equal(asked[0].server, SERVER);
      // The request reaches the host as the server sent it. The direct
      // client's copy has its keys reordered by the SDK's validation, so
      // compare values; stdio key order is checked against the server's
      // own definition below.
      assertSameJSONUnordered(asked[0].params, directElicits[0]);
      if (transport === 'stdio') {
        const field = asked[0].params.requestedSchema.properties.name;
        assert.deepEqual(Object.keys(field), ['title', 'type', 'description'], 'key order of the server\'s form field');
      }
    });

    test('resources: list, templates, reads', async () => {
      // Resources a session created (gzip-file-as-resource) are its own.
      const shared = (list) => list.filter((r) => !r.uri.startsWith('demo://resource/session/'));
      const want = await direct.rawRequest('resources/list', {}, ListResourcesResultSchema);
      const got = await h.request('resources/list', { sessionId, server: SERVER });
      assertSameJSON(mask({ ...got, resources: shared(got.resources) }), mask({ ...want, resources: shared(want.resources) }));
      const all = await h.request('resources/list', { sessionId, server: SERVER, all: true });
      assertSameJSON(mask(shared(all.resources)), mask(shared(want.resources)));

      const wantT = await direct.rawRequest('resources/templates/list', {}, ListResourceTemplatesResultSchema);
      const gotT = await h.request('resources/templates/list', { sessionId, server: SERVER });
      assertSameJSON(gotT, wantT);
      assert.ok(gotT.resourceTemplates.length >= 2);

      const uris = [...shared(want.resources).map((r) => r.uri), 'demo://resource/dynamic/text/1', 'demo://resource/dynamic/blob/2'];
      for (const uri of uris) {
        const w = await direct.rawRequest('resources/read', { uri }, ReadResourceResultSchema);
        const g = await h.request('resources/read', { sessionId, server: SERVER, uri });
        assertSameJSON(mask(g), mask(w), `resources/read ${uri}`);
      }
      const bad = await rpcError(h.request('resources/read', { sessionId, server: SERVER, uri: 'demo://resource/dynamic/text/0' }));
      assert.equal(bad.ok, false, 'reading an unknown resource is an error');
      assert.equal(bad.data?.server, SERVER);
    });

    test('prompts: list and get; completions', async () => {
      const want = await direct.rawRequest('prompts/list', {}, ListPromptsResultSchema);
      const got = await h.request('prompts/list', { sessionId, server: SERVER });
      assertSameJSON(got, want);
      const gets = [
        ['simple-prompt', undefined],
        ['args-prompt', { city: 'Paris', state: 'Île-de-France' }],
        ['resource-prompt', { resourceType: 'Text', resourceId: '1' }],
        ['completable-prompt', { department: 'Engineering', name: 'Alice' }],
      ];
      for (const [name, args] of gets) {
        const w = await direct.rawRequest('prompts/get', { name, arguments: args }, GetPromptResultSchema);
        const g = await h.request('prompts/get', { sessionId, server: SERVER, name, arguments: args });
        assertSameJSON(mask(g), mask(w), `prompts/get ${name}`);
      }
      const completions = [
        { ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'S' } },
        {
          ref: { type: 'ref/prompt', name: 'completable-prompt' },
          argument: { name: 'name', value: '' },
          context: { arguments: { department: 'Sales' } },
        },
        { ref: { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, argument: { name: 'resourceId', value: '1' } },
      ];
      for (const params of completions) {
        const w = await direct.rawRequest('completion/complete', params, CompleteResultSchema);
        const g = await h.request('completion/complete', { sessionId, server: SERVER, ...params });
        assertSameJSON(g, w, `completion/complete ${JSON.stringify(params)}`);
        assert.ok(g.completion.values.length > 0);
      }
    });

    test('unknown tool and unknown server are host-protocol errors', async () => {
      const t1 = await rpcError(h.request('tools/call', { sessionId, name: qualified('no-such-tool'), arguments: {} }));
      assert.equal(t1.code, -32013, t1.message);
      const t2 = await rpcError(h.request('resources/list', { sessionId, server: 'nope' }));
      assert.equal(t2.code, -32010, t2.message);
      const t3 = await rpcError(h.request('tools/list', { sessionId: 'no-such-session' }));
      assert.equal(t3.code, -32001, t3.message);
    });

    test('clean shutdown: the sidecar exits 0 and no server process is left', async () => {
      const pids = await h.serverPids(sessionId);
      if (transport === 'stdio') assert.equal(pids.length, 1);
      const { code, signal } = await h.shutdown();
      assert.equal(signal, null);
      assert.equal(code, 0);
      assert.deepEqual(await waitGone(pids), [], 'server processes left behind');
    });
  });
}

describe('server-everything with mcp_tool_list_changed on', () => {
  for (const transport of ['stdio', 'http']) {
    test(`the conditional tools registered after initialized appear (${transport})`, async (t) => {
      let httpServer;
      let cfg = stdioServer(everythingScript(), ['stdio']);
      if (transport === 'http') {
        httpServer = await startEverythingHTTP();
        cfg = { url: httpServer.url };
      }
      const h = new SidecarHost({
        servers: { [SERVER]: cfg },
        capabilities: { elicitation: true },
        features: { mcp_tool_list_changed: true },
      }).start();
      try {
        await h.initialize();
        const { session, complete } = await h.openSession();
        assert.deepEqual(complete.ready, [SERVER]);
        const list = await h.request('tools/list', { sessionId: session.sessionId });
        const names = list.tools.map((x) => x.tool);
        for (const name of ['trigger-elicitation-request', 'simulate-research-query']) {
          assert.ok(names.includes(name), `${name} listed (got ${names.join(', ')})`);
        }
        assert.equal(list.servers[0].catalog, 'live');
        // A tool added by a notification can be called in the same turn.
        const res = await h.request('tools/call', { sessionId: session.sessionId, name: qualified('echo'), arguments: { message: 'x' } });
        assert.deepEqual(res, { content: [{ type: 'text', text: 'Echo: x' }] });
        const refreshed = await h.request('servers/refresh', { sessionId: session.sessionId, server: SERVER });
        t.diagnostic(`servers/refresh result keys: ${Object.keys(refreshed).join(', ')}`);
        const changed = h.all('mcp/toolsChanged', (p) => p.sessionId === session.sessionId);
        t.diagnostic(`mcp/toolsChanged: ${JSON.stringify(changed)}`);
        const { code } = await h.shutdown();
        assert.equal(code, 0);
      } finally {
        h.kill();
        await httpServer?.stop();
      }
    });
  }
});
