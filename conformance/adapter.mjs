#!/usr/bin/env node
// Client under test for the official MCP conformance suite
// (@modelcontextprotocol/conformance `client --command`): a host that runs
// mcp-sidecar with one Streamable HTTP server, the URL the runner appends,
// and does through the host protocol what the scenario named by
// MCP_CONFORMANCE_SCENARIO expects of an MCP client.
//
// Usage: node adapter.mjs <server-url>   (MCP_SIDECAR_BIN: the sidecar binary)
// Exit status 0 when every step the scenario needs succeeded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SidecarHost, baseEnv } from './lib/host.mjs';

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const SERVER = 'conformance';
/**
 * The scenario's context: pre-registered client credentials for auth/*, the
 * tool calls to make for http-custom-headers.
 */
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
const auth = scenario.startsWith('auth/');
/**
 * How this host takes part in OAuth (ADAPTER_AUTH_MODE): "browser" (the
 * default) opens the URL and lets the redirect reach the sidecar; "redirect"
 * catches the redirect itself (capabilities.authorization.redirect); "none"
 * declares no capability, finds the URL in needs_authorization and opens it
 * by hand.
 */
const authMode = process.env.ADAPTER_AUTH_MODE || 'browser';

const log = (...a) => console.log(`[adapter ${scenario}]`, ...a);

/**
 * The user accepts the form, ticking every box and changing nothing else:
 * the sidecar (the MCP client the server sees) fills in the schema's
 * defaults (SEP-1034). The host must not do that itself, or the scenario
 * would test the adapter instead of the sidecar.
 */
function acceptAsOffered(params) {
  const content = {};
  for (const [name, prop] of Object.entries(params?.params?.requestedSchema?.properties ?? {})) {
    if (prop?.type === 'boolean' && prop.default === undefined) content[name] = true;
  }
  return { action: 'accept', content };
}

/**
 * The OAuth client of auth/* scenarios, as configuration: the scenario's
 * pre-registered client (its secret through an environment variable, the
 * only way the sidecar takes one), else a client ID metadata document URL,
 * which the sidecar uses where the authorization server supports it and
 * falls back to dynamic registration elsewhere (go-sdk's own conformance
 * client does the same).
 */
const oauthConfig = context.client_id
  ? { client_id: context.client_id, ...(context.client_secret ? { client_secret_env_var: 'CONFORMANCE_CLIENT_SECRET' } : {}) }
  : { client_id: 'https://conformance-test.local/client-metadata.json' };

/**
 * mcp/authorize, answered as a host that opens the URL in a browser where
 * the user approves at once: it answers {} and the "browser" follows the
 * redirects, the last one to the sidecar's loopback listener.
 */
function browse(params) {
  log('mcp/authorize', params.authorizationUrl);
  setImmediate(() => openInBrowser(params.authorizationUrl));
  return {};
}

async function openInBrowser(authorizationUrl) {
  try {
    const res = await fetch(authorizationUrl);
    log('browser landed on', res.url, res.status);
  } catch (err) {
    log('browser failed:', err?.message ?? err);
  }
}

/** mcp/authorize for a host that catches the redirect: where the
 * authorization server sends the browser is the answer. */
async function catchRedirect(params) {
  log('mcp/authorize', params.authorizationUrl, 'redirectUri', params.redirectUri);
  const res = await fetch(params.authorizationUrl, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (!location?.startsWith(params.redirectUri)) throw new Error(`redirected to ${location}, not to ${params.redirectUri}`);
  return { redirectUrl: location };
}

// A folder of credentials of this run only: every scenario starts
// unauthorized.
const credentialsDir = auth ? mkdtempSync(path.join(tmpdir(), 'sidecar-conformance-creds-')) : undefined;

const host = new SidecarHost({
  servers: {
    [SERVER]: {
      url,
      startup_timeout_sec: 20,
      ...(auth ? { oauth: oauthConfig } : {}),
    },
  },
  capabilities: {
    elicitation: true,
    ...(auth && authMode !== 'none' ? { authorization: authMode === 'redirect' ? { redirect: true } : {} } : {}),
  },
  env: baseEnv(context.client_secret ? { CONFORMANCE_CLIENT_SECRET: context.client_secret } : {}),
  onElicit: (params) => {
    log('mcp/elicit', JSON.stringify(params));
    return acceptAsOffered(params);
  },
  onAuthorize: authMode === 'redirect' ? catchRedirect : browse,
}).start();

async function callTool(sessionId, tool, args = {}, { allowError = false } = {}) {
  const call = () => host.request('tools/call', { sessionId, server: SERVER, tool, arguments: args });
  let res;
  try {
    res = await call();
  } catch (err) {
    // A host without the authorization capability gets the URL in the
    // error: the person opens it, and the call is tried again once the
    // sidecar has the token (it says nothing when it does: retry).
    const url = err?.data?.kind === 'needs_authorization' && authMode === 'none' ? err.data.authorizationUrl : '';
    if (!url) throw err;
    log('tools/call needs authorization; opening', url);
    await openInBrowser(url);
    for (let i = 0; ; i++) {
      try {
        res = await call();
        break;
      } catch (again) {
        if (again?.data?.kind !== 'needs_authorization' || i >= 100) throw again;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }
  log(`tools/call ${tool} ->`, JSON.stringify(res));
  if (res.isError && !allowError) throw new Error(`tool ${tool} returned isError: ${JSON.stringify(res.content)}`);
  return res;
}

/** A request whose failure the scenario does not judge: logged, not thrown. */
async function attempt(method, params) {
  try {
    const res = await host.request(method, params);
    log(`${method} ->`, JSON.stringify(res));
    return res;
  } catch (err) {
    log(`${method} failed:`, err?.message ?? err);
    return undefined;
  }
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
  // Connecting and listing is all these ask of a client.
  'request-metadata': async () => {},
  'json-schema-ref-no-deref': async () => {},
  // Each of the server's four tools, with no arguments: the first two ask
  // for input (a multi round-trip result), which the user gives through
  // mcp/elicit; the calls are answered once each.
  'sep-2322-client-request-state': async (sessionId) => {
    for (const tool of ['test_mrtr_echo_state', 'test_mrtr_no_state', 'test_mrtr_unrelated', 'test_mrtr_no_result_type']) {
      await callTool(sessionId, tool);
    }
  },
  // Every kind of request once: a tool, a resource, a prompt (the first of
  // each list), as a host browsing the server would.
  'http-standard-headers': async (sessionId, tools) => {
    if (tools[0]) await callTool(sessionId, tools[0].tool, {}, { allowError: true });
    const resources = await attempt('resources/list', { sessionId, server: SERVER });
    if (resources?.resources?.[0]) await attempt('resources/read', { sessionId, server: SERVER, uri: resources.resources[0].uri });
    const prompts = await attempt('prompts/list', { sessionId, server: SERVER });
    if (prompts?.prompts?.[0]) await attempt('prompts/get', { sessionId, server: SERVER, name: prompts.prompts[0].name, arguments: {} });
  },
  // The calls the scenario names, their arguments as given (nulls and empty
  // strings included).
  'http-custom-headers': async (sessionId) => {
    const calls = context.toolCalls ?? [];
    if (calls.length === 0) throw new Error('MCP_CONFORMANCE_CONTEXT has no toolCalls');
    for (const c of calls) await callTool(sessionId, c.name, c.arguments, { allowError: true });
  },
  // Every tool the sidecar lists (those with invalid x-mcp-header
  // declarations are not), with the argument the valid one declares.
  'http-invalid-tool-headers': async (sessionId, tools) => {
    if (tools.length === 0) throw new Error('no tool listed');
    for (const t of tools) await callTool(sessionId, t.tool, { region: 'us-west1' });
  },
};

async function main() {
  const init = await host.initialize(credentialsDir ? { credentialsDir } : {});
  log('initialize ->', JSON.stringify(init));
  const opened = await host.openSession();
  const { session } = opened;
  let { complete } = opened;
  log('startupComplete', JSON.stringify(complete));
  const waiting = complete.needsAuthorization?.find((s) => s.server === SERVER);
  if (authMode === 'none' && waiting?.authorizationUrl) {
    // A person opens the URL shown: the server then starts on its own.
    await openInBrowser(waiting.authorizationUrl);
    complete = (await host.waitFor('mcp/startupComplete', (p) => p.sessionId === session.sessionId && p.round === 1, { since: 0 })).params;
    log("startupComplete (after the URL was opened)", JSON.stringify(complete));
  }
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
  if (credentialsDir) rmSync(credentialsDir, { recursive: true, force: true });
  if (process.env.CONFORMANCE_SIDECAR_STDERR || status !== 0) process.stderr.write(host.stderr.slice(-8000));
}
process.exit(status);
