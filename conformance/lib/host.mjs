// A small host of mcp-sidecar for the conformance suite: it spawns the
// sidecar, speaks the host protocol (LSP framing, JSON-RPC) with
// vscode-jsonrpc, records every notification the sidecar sends, answers
// mcp/elicit, mcp/sample and mcp/roots when asked to, and checks that no server process
// is left behind when the sidecar exits.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as rpc from 'vscode-jsonrpc/node';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The sidecar binary: $MCP_SIDECAR_BIN, else the one run.sh builds. */
export function sidecarBinary() {
  return process.env.MCP_SIDECAR_BIN || path.join(here, '..', '.work', 'mcp-sidecar');
}

/** Variables a stdio MCP client passes on by default (as the TypeScript SDK). */
const baseEnvNames = ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER'];

/** The environment the sidecar runs with: only the usual base variables, so
 * that its children and a direct SDK client's children see the same one. */
export function baseEnv(extra = {}) {
  const env = {};
  for (const k of baseEnvNames) if (process.env[k] !== undefined) env[k] = process.env[k];
  return { ...env, ...extra };
}

/**
 * @typedef {{method: string, params: any, at: number}} Event
 * @typedef {{
 *   servers?: Record<string, object>,
 *   features?: Record<string, boolean>,
 *   capabilities?: {elicitation?: boolean | {form?: object, url?: object}, roots?: boolean, sampling?: {tools?: object}, authorization?: {redirect?: boolean}},
 *   cacheDir?: string,
 *   env?: Record<string, string>,
 *   onElicit?: (params: any) => any,
 *   onRoots?: (params: any) => any,
 *   onSample?: (params: any) => any,
 *   onAuthorize?: (params: any) => any,
 *   args?: string[],
 * }} HostOptions
 */

export class SidecarHost {
  /** @param {HostOptions} opts */
  constructor(opts = {}) {
    this.opts = opts;
    /** @type {Event[]} */
    this.events = [];
    /** @type {Set<(e: Event) => void>} */
    this.listeners = new Set();
    this.stderr = '';
    this.elicitRequests = [];
    this.rootsRequests = [];
    this.sampleRequests = [];
    this.authorizeRequests = [];
  }

  /** Spawns the sidecar and connects to it; does not send initialize. */
  start() {
    const child = spawn(sidecarBinary(), this.opts.args ?? [], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: this.opts.env ?? baseEnv(),
    });
    this.child = child;
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => resolve({ code, signal }));
      child.on('error', (err) => resolve({ code: -1, signal: null, error: err }));
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      if (process.env.CONFORMANCE_VERBOSE) process.stderr.write(d);
      this.stderr = (this.stderr + d).slice(-256 * 1024);
    });
    const conn = rpc.createMessageConnection(
      new rpc.StreamMessageReader(child.stdout),
      new rpc.StreamMessageWriter(child.stdin),
    );
    conn.onNotification((method, params) => this.record(method, params));
    // vscode-jsonrpc routes $/progress to its own progress handlers, never
    // to the catch-all handler: it needs a handler of its own.
    conn.onNotification('$/progress', (params) => this.record('$/progress', params));
    conn.onRequest('mcp/elicit', async (params) => {
      this.elicitRequests.push(params);
      this.record('mcp/elicit', params);
      if (!this.opts.onElicit) return { action: 'decline' };
      return this.opts.onElicit(params);
    });
    conn.onRequest('mcp/sample', async (params) => {
      this.sampleRequests.push(params);
      this.record('mcp/sample', params);
      if (!this.opts.onSample) throw new rpc.ResponseError(-32601, 'this host does not sample');
      return this.opts.onSample(params);
    });
    conn.onRequest('mcp/roots', async (params) => {
      this.rootsRequests.push(params);
      this.record('mcp/roots', params);
      return this.opts.onRoots ? this.opts.onRoots(params) : { roots: [] };
    });
    conn.onRequest('mcp/authorize', async (params) => {
      this.authorizeRequests.push(params);
      this.record('mcp/authorize', params);
      if (!this.opts.onAuthorize) return { cancelled: true };
      return this.opts.onAuthorize(params);
    });
    conn.onError(([err]) => this.record('host/error', { message: String(err) }));
    conn.onClose(() => this.record('host/close', {}));
    conn.listen();
    this.conn = conn;
    return this;
  }

  record(method, params) {
    const e = { method, params, at: Date.now() };
    this.events.push(e);
    for (const l of this.listeners) l(e);
  }

  /** Sends a request; rejects with a vscode-jsonrpc ResponseError on error. */
  request(method, params, token) {
    return token ? this.conn.sendRequest(method, params, token) : this.conn.sendRequest(method, params);
  }

  notify(method, params) {
    return this.conn.sendNotification(method, params);
  }

  /**
   * Waits for a recorded or future event matching method and pred.
   * @param {string} method
   * @param {(params: any) => boolean} [pred]
   * @param {{timeoutMs?: number, since?: number}} [opt] since: index in events to search from
   * @returns {Promise<Event>}
   */
  waitFor(method, pred = () => true, { timeoutMs = 30000, since = 0 } = {}) {
    const match = (e) => e.method === method && pred(e.params);
    const found = this.events.slice(since).find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const l = (e) => {
        if (!match(e)) return;
        clearTimeout(timer);
        this.listeners.delete(l);
        resolve(e);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(l);
        reject(new Error(`no ${method} notification within ${timeoutMs} ms; stderr tail:\n${this.stderr.slice(-4000)}`));
      }, timeoutMs);
      this.listeners.add(l);
    });
  }

  /** initialize + initialized with this host's servers, features and capabilities. */
  async initialize(extra = {}) {
    const result = await this.request('initialize', {
      clientInfo: { name: 'mcp-sidecar-conformance', version: '1.0.0' },
      capabilities: this.opts.capabilities ?? {},
      servers: this.opts.servers ?? {},
      features: this.opts.features ?? {},
      ...(this.opts.cacheDir ? { cacheDir: this.opts.cacheDir } : {}),
      ...extra,
    });
    this.notify('initialized', {});
    this.initializeResult = result;
    return result;
  }

  /**
   * Opens a session (eager by default) and waits for its round-0
   * mcp/startupComplete.
   * @returns {Promise<{session: any, complete: any}>}
   */
  async openSession(params = {}) {
    const since = this.events.length;
    const session = await this.request('session/open', { startup: 'eager', ...params });
    const complete = await this.waitFor(
      'mcp/startupComplete',
      (p) => p.sessionId === session.sessionId && p.round === 0,
      { since },
    );
    return { session, complete: complete.params };
  }

  /** Every event of method (optionally filtered). */
  all(method, pred = () => true) {
    return this.events.filter((e) => e.method === method && pred(e.params)).map((e) => e.params);
  }

  /** The pids of the session's server processes, from servers/status. */
  async serverPids(sessionId) {
    const st = await this.request('servers/status', { sessionId });
    return st.servers.filter((s) => s.pid).map((s) => s.pid);
  }

  /**
   * shutdown + exit, then waits for the sidecar to exit.
   * @returns {Promise<{code: number|null, signal: string|null}>}
   */
  async shutdown({ timeoutMs = 20000 } = {}) {
    await this.request('shutdown', null);
    this.notify('exit', null);
    return this.waitExit(timeoutMs);
  }

  /** Waits for the sidecar process to end. */
  async waitExit(timeoutMs = 20000) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`sidecar did not exit within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
      this.conn?.dispose();
    }
  }

  /** Kills the sidecar if it still runs (test clean-up; never the check). */
  kill() {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.conn?.dispose();
  }
}

/**
 * Live (non-zombie) processes whose pid or process group is one of pids.
 * Each stdio server runs in its own process group led by the server, so a
 * member of that group is a process the server left behind.
 * @param {number[]} pids
 * @returns {{pid: number, pgid: number, state: string, cmd: string}[]}
 */
export function survivingProcesses(pids) {
  const wanted = new Set(pids);
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = rest[0];
    const pgid = Number(rest[2]);
    const pid = Number(name);
    if (state === 'Z' || state === 'X') continue;
    if (wanted.has(pid) || wanted.has(pgid)) {
      let cmd = '';
      try {
        cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      } catch {}
      out.push({ pid, pgid, state, cmd });
    }
  }
  return out;
}

/**
 * Waits until none of pids (nor their groups) has a live process. Polls
 * /proc: the processes are not ours to wait on.
 */
export async function waitGone(pids, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = survivingProcesses(pids);
    if (left.length === 0) return [];
    if (Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Normalises a vscode-jsonrpc rejection to {code, message, data}. */
export async function rpcError(promise) {
  try {
    const value = await promise;
    return { ok: true, value };
  } catch (err) {
    return { ok: false, code: err.code, message: err.message, data: err.data };
  }
}

export { rpc };
