// The reference MCP servers the suite runs (from npm, installed by run.sh
// into .work/node_modules) and a direct @modelcontextprotocol/sdk client to
// compare the sidecar's answers with.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const require = createRequire(import.meta.url);

/** Entry script of an npm reference server package. */
export function serverScript(pkg) {
  return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'dist', 'index.js');
}

export const everythingScript = () => serverScript('@modelcontextprotocol/server-everything');
export const filesystemScript = () => serverScript('@modelcontextprotocol/server-filesystem');
export const memoryScript = () => serverScript('@modelcontextprotocol/server-memory');

/** A stdio ServerConfig (Codex keys) running a script with this node. */
export function stdioServer(script, args = [], extra = {}) {
  return { command: process.execPath, args: [script, ...args], ...extra };
}

export function tempDir(prefix) {
  return mkdtempSync(path.join(os.tmpdir(), `mcp-conformance-${prefix}-`));
}

/** A free loopback TCP port (there is a small window before it is used). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts server-everything over Streamable HTTP on a free loopback port and
 * waits for it to listen.
 * @returns {Promise<{url: string, child: import('node:child_process').ChildProcess, stop: () => Promise<void>}>}
 */
export async function startEverythingHTTP() {
  const port = await freePort();
  const child = spawn(process.execPath, [everythingScript(), 'streamableHttp'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything HTTP did not listen in 20 s:\n${log}`)), 20000);
    const onData = (d) => {
      log += d;
      if (log.includes(`listening on port ${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything HTTP exited (${code}):\n${log}`));
    });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.on('exit', r));
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * A direct MCP client. It records the raw JSON-RPC responses, so that
 * comparisons see what the server sent, not what the SDK's schemas made of it.
 */
export class DirectClient {
  /**
   * @param {{command?: string, args?: string[], env?: Record<string,string>, cwd?: string, url?: string}} cfg
   * @param {object} capabilities client capabilities to advertise
   */
  static async connect(cfg, capabilities = {}, handlers = {}) {
    const d = new DirectClient();
    d.client = new Client({ name: 'mcp-sidecar-conformance-direct', version: '1.0.0' }, { capabilities });
    d.transport = cfg.url
      ? new StreamableHTTPClientTransport(new URL(cfg.url))
      : new StdioClientTransport({ command: cfg.command, args: cfg.args, env: cfg.env, cwd: cfg.cwd, stderr: 'pipe' });
    for (const [schema, fn] of handlers.requests ?? []) d.client.setRequestHandler(schema, fn);
    await d.client.connect(d.transport);
    d.raw = new Map();
    const orig = d.transport.onmessage;
    d.transport.onmessage = (msg, extra) => {
      if ('id' in msg && ('result' in msg || 'error' in msg)) d.raw.set(msg.id, msg);
      orig?.(msg, extra);
    };
    return d;
  }

  /**
   * Sends a request and returns the server's raw result (rejects on error).
   * The SDK validates loosely; the raw message is what we compare.
   */
  async rawRequest(method, params, schema, options) {
    const before = new Set(this.raw.keys());
    await this.client.request({ method, params }, schema, options);
    const ids = [...this.raw.keys()].filter((k) => !before.has(k));
    const msg = this.raw.get(ids[ids.length - 1]);
    return msg.result;
  }

  async close() {
    await this.client.close();
  }
}
