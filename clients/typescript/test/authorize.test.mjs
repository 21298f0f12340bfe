// onAuthorize against the real sidecar binary ($MCP_SIDECAR_BIN) and a real
// OAuth-protected Streamable HTTP MCP server: internal/testing/oauthtest's
// authorization server and MCP server, served on loopback by
// $MCP_SIDECAR_OAUTH_SERVE (run.sh builds both). The handler does what a
// host does: it opens the authorization URL in a "browser" (fetch, which
// follows the redirects to the sidecar's loopback listener), or catches the
// redirect and answers with it (docs/protocol.md, "mcp/authorize").
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';

import { SidecarClient } from '../dist/index.js';

const binary = process.env.MCP_SIDECAR_BIN;
assert.ok(binary, 'set MCP_SIDECAR_BIN to the mcp-sidecar binary (run.sh does)');
const oauthServe = process.env.MCP_SIDECAR_OAUTH_SERVE;
assert.ok(oauthServe, 'set MCP_SIDECAR_OAUTH_SERVE to the built internal/testing/oauthtest/serve (run.sh does)');

/**
 * Starts the protected server. stop() ends it (stdin EOF) and resolves
 * with what its servers saw.
 */
async function startProtected(t) {
  const child = spawn(oauthServe, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  });
  const first = await lines.next();
  assert.equal(first.done, false, 'oauthtest serve printed its URLs');
  const { url, issuer } = JSON.parse(first.value);
  let stopped;
  const stop = () =>
    (stopped ??= (async () => {
      child.stdin.end();
      const last = await lines.next();
      const [code] = await exited;
      assert.equal(code, 0, 'oauthtest serve exit status');
      return JSON.parse(last.value);
    })());
  return { url, issuer, stop };
}

/**
 * Initializes a sidecar with the protected server and the given
 * authorization capability, opens an eager session and waits for round 0.
 */
async function authorizedSession(t, authorization, onAuthorize) {
  const server = await startProtected(t);
  const client = await SidecarClient.start({ binary, stderr: 'ignore' });
  t.after(() => client.dispose());
  const asked = [];
  client.onAuthorize((params, signal) => {
    asked.push(params);
    return onAuthorize(params, signal);
  });
  const roundZero = new Promise((resolve) =>
    client.onNotification('mcp/startupComplete', (p) => {
      if (p.round === 0) resolve(p);
    }),
  );
  await client.initialize({
    clientInfo: { name: 'client-authorize-test', version: '1' },
    capabilities: { authorization },
    cacheDir: mkdtempSync(path.join(os.tmpdir(), 'sidecar-cache-')),
    // A folder of this test's own: no tokens from elsewhere, none left in
    // the user's.
    credentialsDir: mkdtempSync(path.join(os.tmpdir(), 'sidecar-creds-')),
    servers: { protected: { url: server.url } },
  });
  const { sessionId } = await client.openSession({ startup: 'eager' });
  const complete = await roundZero;
  return { client, server, sessionId, complete, asked };
}

/** The call only a token the authorization server issued gets through. */
async function echoThrough(client, sessionId) {
  const result = await client.callTool({ sessionId, name: 'mcp__protected__echo', arguments: { text: 'authorized' } });
  assert.deepEqual(result.content, [{ type: 'text', text: 'authorized' }]);
}

test('onAuthorize: the host opens the URL and answers {}, and the server starts with a token', async (t) => {
  let browsed;
  const { client, server, sessionId, complete, asked } = await authorizedSession(t, {}, (params) => {
    // Answer first, then the "browser" goes: when the redirect reaches
    // the sidecar before the answer, it cancels this request.
    browsed = new Promise((resolve) => setImmediate(resolve)).then(() => fetch(params.authorizationUrl));
    return {};
  });
  assert.deepEqual(complete.ready, ['protected'], JSON.stringify(complete));
  assert.equal(asked.length, 1);
  assert.equal(asked[0].server, 'protected');
  assert.equal(asked[0].sessionId, sessionId);
  assert.ok(asked[0].authorizationUrl.startsWith(`${server.issuer}/authorize?`), asked[0].authorizationUrl);
  assert.equal(asked[0].redirectUri, undefined, 'redirectUri goes only to a host with authorization.redirect');
  const landed = await browsed;
  assert.equal(landed.status, 200, 'the sidecar\'s loopback listener took the redirect');
  assert.match(landed.url, /^http:\/\/127\.0\.0\.1:\d+\/callback\?/);

  await echoThrough(client, sessionId);
  await client.dispose();
  const seen = await server.stop();
  assert.deepEqual(seen.counts, { Registrations: 1, Authorizations: 1, CodeExchanges: 1, Refreshes: 0, RefreshDenied: 0 });
  assert.ok(seen.accepted > 0, 'the MCP server served requests with the token');
});

test('onAuthorize with authorization.redirect: the host catches the redirect and answers {redirectUrl}', async (t) => {
  const { client, server, sessionId, complete, asked } = await authorizedSession(t, { redirect: true }, async (params) => {
    const res = await fetch(params.authorizationUrl, { redirect: 'manual' });
    const location = res.headers.get('location');
    assert.ok(location?.startsWith(`${params.redirectUri}?`), `redirected to ${location}, not to ${params.redirectUri}`);
    return { redirectUrl: location };
  });
  assert.deepEqual(complete.ready, ['protected'], JSON.stringify(complete));
  assert.equal(asked.length, 1);
  assert.match(asked[0].redirectUri, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);

  await echoThrough(client, sessionId);
  await client.dispose();
  const seen = await server.stop();
  assert.equal(seen.counts.CodeExchanges, 1);
});

test('onAuthorize answering {cancelled: true} leaves the server in needs_authorization', async (t) => {
  const { client, server, sessionId, complete } = await authorizedSession(t, {}, () => ({ cancelled: true }));
  assert.deepEqual(complete.ready, []);
  assert.deepEqual(
    complete.needsAuthorization?.map((n) => n.server),
    ['protected'],
    JSON.stringify(complete),
  );
  await assert.rejects(client.callTool({ sessionId, server: 'protected', tool: 'echo', arguments: { text: 'x' } }), (err) => {
    assert.equal(err.kind, 'needs_authorization');
    return true;
  });
  await client.dispose();
  const seen = await server.stop();
  assert.equal(seen.counts.CodeExchanges, 0);
});
