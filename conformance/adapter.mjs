#!/usr/bin/env node
// Client under test for the official MCP conformance suite
// (@modelcontextprotocol/conformance `client --command`): a host that runs
// mcp-sidecar with one Streamable HTTP server, the URL the runner appends,
// and does through the host protocol what the scenario named by
// MCP_CONFORMANCE_SCENARIO expects of an MCP client.
//
// Usage: node adapter.mjs <server-url>   (MCP_SIDECAR_BIN: the sidecar binary)
// Exit status 0 when every step the scenario needs succeeded.
import { SidecarHost } from './lib/host.mjs';

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const SERVER = 'conformance';

const log = (...a) => console.log(`[adapter ${scenario}]`, ...a);

/**
 * The user accepts the form as offered, changing nothing: the answer has no
 * fields, and the sidecar (the MCP client the server sees) fills in the
 * schema's defaults (SEP-1034). The host must not do it itself, or this
 * scenario would test the adapter instead of the sidecar.
 */
const acceptAsOffered = () => ({ action: 'accept', content: {} });

const host = new SidecarHost({
  servers: {
    [SERVER]: {
      url,
      startup_timeout_sec: 20,
      ...(process.env.ADAPTER_PROTOCOL_VERSION ? { protocol_version: process.env.ADAPTER_PROTOCOL_VERSION } : {}),
    },
  },
  capabilities: { elicitation: true },
  onElicit: (params) => {
    log('mcp/elicit', JSON.stringify(params));
    return acceptAsOffered();
  },
}).start();

async function callTool(sessionId, tool, args = {}) {
  const res = await host.request('tools/call', { sessionId, server: SERVER, tool, arguments: args });
  log(`tools/call ${tool} ->`, JSON.stringify(res));
  if (res.isError) throw new Error(`tool ${tool} returned isError: ${JSON.stringify(res.content)}`);
  return res;
}

/** What each scenario needs from the client, beyond initialize. */
const scenarios = {
  initialize: async () => {},
  tools_call: async (sessionId, tools) => {
    if (!tools.some((t) => t.tool === 'add_numbers')) throw new Error('add_numbers not listed');
    const res = await callTool(sessionId, 'add_numbers', { a: 5, b: 3 });
    if (!JSON.stringify(res).includes('8')) throw new Error('unexpected sum');
  },
  'elicitation-sep1034-client-defaults': async (sessionId) => {
    await callTool(sessionId, 'test_client_elicitation_defaults');
  },
  'sse-retry': async (sessionId) => {
    await callTool(sessionId, 'test_reconnection');
  },
  'json-schema-2020-12-preservation': async (sessionId, tools) => {
    const focal = tools.find((t) => t.tool === 'json_schema_2020_12_tool');
    if (!focal) throw new Error('json_schema_2020_12_tool not listed');
    await callTool(sessionId, 'json_schema_echo', { schema: focal.inputSchema });
  },
  'request-metadata': async () => {},
};

async function main() {
  const init = await host.initialize();
  log('initialize ->', JSON.stringify(init));
  const { session, complete } = await host.openSession();
  log('startupComplete', JSON.stringify(complete));
  if (!complete.ready.includes(SERVER)) {
    throw new Error(`server did not start: ${JSON.stringify(complete.failed)}`);
  }
  const list = await host.request('tools/list', { sessionId: session.sessionId });
  log('tools/list ->', JSON.stringify(list));
  const run =
    scenarios[scenario] ??
    (async (sessionId, tools) => {
      // Unknown scenario: exercise every tool with empty arguments.
      for (const t of tools) await callTool(sessionId, t.tool);
    });
  await run(session.sessionId, list.tools);
}

let status = 0;
try {
  await main();
} catch (err) {
  console.error(`[adapter ${scenario}] FAILED: ${err?.message ?? err}`);
  status = 1;
}
try {
  const { code } = await host.shutdown({ timeoutMs: 10000 });
  if (code !== 0) {
    console.error(`[adapter ${scenario}] sidecar exited with ${code}`);
    status = status || 1;
  }
} catch (err) {
  console.error(`[adapter ${scenario}] shutdown: ${err?.message ?? err}`);
  status = status || 1;
} finally {
  host.kill();
  if (process.env.CONFORMANCE_SIDECAR_STDERR || status !== 0) process.stderr.write(host.stderr.slice(-8000));
}
process.exit(status);
