// The package's mcp-sidecar command (bin/mcp-sidecar.js), as a host runs it
// through npx: the host holds the wrapper's pid, so a signal to it must end
// the sidecar too, and the wrapper must report the sidecar's exit.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SidecarClient } from '../dist/index.js';

const binary = process.env.MCP_SIDECAR_BIN;
assert.ok(binary, 'set MCP_SIDECAR_BIN to the mcp-sidecar binary (run.sh does)');
const wrapper = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'mcp-sidecar.js');

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
  test(`${signal} to the wrapper ends the sidecar and its servers; the wrapper exits as the sidecar did`, async (t) => {
    // The wrapper finds the binary through MCP_SIDECAR_BIN, as it would
    // find the platform package's.
    const client = await SidecarClient.start({
      binary: process.execPath,
      args: [wrapper],
      env: { ...process.env, MCP_SIDECAR_BIN: binary },
      stderr: 'ignore',
    });
    let sidecarPid = 0;
    t.after(async () => {
      // A sidecar the wrapper left behind would keep running: end it.
      if (sidecarPid && alive(sidecarPid)) process.kill(sidecarPid, 'SIGKILL');
      await client.dispose(2000);
    });
    await client.initialize({ servers: { example: { command: binary, args: ['example-server'] } } });
    const { sessionId } = await client.openSession({ startup: 'eager' });
    await client.listTools(sessionId); // waits for the startup
    const status = await client.request('servers/status', { sessionId });
    const serverPid = status.servers[0].pid;
    assert.ok(serverPid > 0);
    sidecarPid = parentOf(serverPid);
    assert.notEqual(sidecarPid, client.pid, 'the server is the sidecar\'s child, not the wrapper\'s');
    assert.equal(parentOf(sidecarPid), client.pid, 'the sidecar is the wrapper\'s child');

    process.kill(client.pid, signal);
    // The wrapper exits only after the sidecar has (it reaps it), and the
    // sidecar only after its servers: no waiting for either beyond this.
    const exit = await client.exited;
    assert.deepEqual(exit, { code: 1, signal: null }, 'the sidecar\'s status: 1, no shutdown came first (docs/protocol.md, "Lifecycle")');
    assert.equal(alive(sidecarPid), false, `sidecar ${sidecarPid} is gone`);
    assert.equal(alive(serverPid), false, `server ${serverPid} is gone`);
  });
}

test('the wrapper exits with the sidecar\'s status', async () => {
  const client = await SidecarClient.start({ binary: process.execPath, args: [wrapper], env: { ...process.env, MCP_SIDECAR_BIN: binary }, stderr: 'ignore' });
  await client.initialize({});
  assert.deepEqual(await client.dispose(), { code: 0, signal: null }, 'shutdown, then exit: 0');
});

/** The parent pid of a process (Linux: /proc). */
function parentOf(pid) {
  // The command may hold spaces and parentheses: fields start after the last ')'.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

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
