// The gateway (`mcp-sidecar mcp`) from the TypeScript SDK's clients, v1
// (@modelcontextprotocol/sdk) and v2 (@modelcontextprotocol/client; with
// its default handshake, MCP 2025-11-25, and pinned to 2026-07-28, where a
// server's elicitation comes as an input-required result and the client's
// next round answers it), over stdio and over Streamable HTTP: two real
// servers (server-everything and server-memory), their tools under
// qualified names, a call, a resource read, and an elicitation of
// server-everything answered by the client; with --deferred, a search then
// a call.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client as ClientV2, StreamableHTTPClientTransport as HTTPTransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioTransportV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HTTPTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { baseEnv, sidecarBinary } from '../lib/host.mjs';
import { everythingScript, freePort, memoryScript, tempDir } from '../lib/servers.mjs';

/** A Codex config.toml with the two servers, in a fresh folder. */
function writeConfig() {
  const dir = tempDir('gateway');
  const q = (s) => JSON.stringify(s);
  const file = path.join(dir, 'config.toml');
  writeFileSync(
    file,
    `[mcp_servers.everything]\ncommand = ${q(process.execPath)}\nargs = [${q(everythingScript())}, "stdio"]\n\n` +
      `[mcp_servers.memory]\ncommand = ${q(process.execPath)}\nargs = [${q(memoryScript())}]\n` +
      `env = { MEMORY_FILE_PATH = ${q(path.join(dir, 'memory.jsonl'))} }\n`,
  );
  return { dir, file };
}

/** The environment of the gateway: a home of its own (cache, credentials). */
function gatewayEnv(dir) {
  return baseEnv({ HOME: dir, XDG_CACHE_HOME: path.join(dir, 'cache'), XDG_CONFIG_HOME: path.join(dir, 'config') });
}

/** Starts `mcp-sidecar mcp ... --http` and waits for its address. */
async function startHTTPGateway(args, env) {
  const port = await freePort();
  const child = spawn(sidecarBinary(), [...args, '--http', `127.0.0.1:${port}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not listen in 20 s:\n${log}`)), 20000);
    child.stderr.on('data', (d) => {
      log += d;
      if (log.includes('serving MCP at')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited (${code}):\n${log}`));
    });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.on('exit', r));
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const answer = async () => ({ action: 'accept', content: { name: 'Ada' } });

/**
 * The clients under test, each with what differs between the SDKs: how a
 * client is made, how a request handler is set, and where callTool takes
 * its options.
 */
const sdks = [
  {
    name: 'v1',
    knownFailures: {},
    client() {
      const client = new ClientV1({ name: 'gateway-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, answer);
      return client;
    },
    Stdio: StdioTransportV1,
    HTTP: HTTPTransportV1,
    callTool: (client, params, options) => client.callTool(params, undefined, options),
  },
  ...[
    ['v2', undefined],
    ['v2 at 2026-07-28', { mode: { pin: '2026-07-28' } }],
  ].map(([name, versionNegotiation, knownFailures = {}]) => ({
    name,
    knownFailures,
    client() {
      const client = new ClientV2({ name: 'gateway-test', version: '1.0.0' }, { capabilities: { elicitation: {} }, versionNegotiation });
      client.setRequestHandler('elicitation/create', answer);
      return client;
    },
    Stdio: StdioTransportV2,
    HTTP: HTTPTransportV2,
    callTool: (client, params, options) => client.callTool(params, options),
  })),
];

async function connect(sdk, transport, args, env) {
  const client = sdk.client();
  let stop = async () => {};
  if (transport === 'stdio') {
    await client.connect(new sdk.Stdio({ command: sidecarBinary(), args, env, stderr: 'ignore' }));
  } else {
    const gw = await startHTTPGateway(args, env);
    stop = gw.stop;
    await client.connect(new sdk.HTTP(gw.url));
  }
  return { client, stop };
}

for (const sdk of sdks) for (const transport of ['stdio', 'http']) {
  describe(`the gateway over ${transport}, TypeScript SDK ${sdk.name}`, () => {
    let client;
    let stop;
    // A check the client is known to fail (sdk.knownFailures, with why)
    // must fail: when it passes, its entry goes.
    const known = (name, fn) =>
      test(name, async () => {
        const why = sdk.knownFailures[name];
        if (!why) return fn();
        await assert.rejects(fn, undefined, `passes: remove "${name}" from the knownFailures of ${sdk.name}`);
      });
    before(async () => {
      const { dir, file } = writeConfig();
      ({ client, stop } = await connect(sdk, transport, ['mcp', '--config', file], gatewayEnv(dir)));
    });
    after(async () => {
      await client?.close();
      await stop?.();
    });

    test('lists the qualified tools of both servers and calls one', async () => {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      assert.ok(names.includes('mcp__everything__echo'), names.join(' '));
      assert.ok(names.includes('mcp__memory__read_graph'), names.join(' '));
      const res = await sdk.callTool(client, { name: 'mcp__everything__echo', arguments: { message: 'through the gateway' } });
      assert.deepEqual(res.content, [{ type: 'text', text: 'Echo: through the gateway' }]);
    });

    known('reads a resource of its owner', async () => {
      const { resources } = await client.listResources();
      const doc = resources.find((r) => r.uri.startsWith('demo://'));
      assert.ok(doc, JSON.stringify(resources.map((r) => r.uri)));
      const read = await client.readResource({ uri: doc.uri });
      assert.equal(read.contents[0].uri, doc.uri);
    });

    test("answers a server's elicitation", async () => {
      const res = await sdk.callTool(client, { name: 'mcp__everything__trigger-elicitation-request', arguments: {} }, { timeout: 30000 });
      assert.match(JSON.stringify(res.content), /Ada/);
    });
  });

  test(`--deferred over ${transport}, TypeScript SDK ${sdk.name}: search, then call`, async () => {
    const { dir, file } = writeConfig();
    const { client, stop } = await connect(sdk, transport, ['mcp', '--deferred', '--config', file], gatewayEnv(dir));
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['search_tools', 'describe_tools', 'call_tool']);
      const found = await sdk.callTool(client, { name: 'search_tools', arguments: { query: 'echo a message back' } });
      const { results } = JSON.parse(found.content[0].text);
      assert.ok(results.some((r) => r.name === 'mcp__everything__echo'), JSON.stringify(results));
      const res = await sdk.callTool(client, { name: 'call_tool', arguments: { name: 'mcp__everything__echo', arguments: { message: 'deferred' } } });
      assert.deepEqual(res.content, [{ type: 'text', text: 'Echo: deferred' }]);
    } finally {
      await client.close();
      await stop();
    }
  });
}
