// The host side of mcp-sidecar's protocol: spawn the sidecar, speak
// LSP-framed JSON-RPC to it over stdio, and type every message with the
// types generated from the protocol schema (protocol.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import {
  CancellationTokenSource,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
  type CancellationToken,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

import { sidecarBinary } from './binary.js';
import {
  ERRORS,
  PROTOCOL_VERSION,
  type AuthorizeParams,
  type AuthorizeResult,
  type CallToolResult,
  type CreateMessageResult,
  type CreateTaskResult,
  type ElicitParams,
  type ElicitResult,
  type ErrorData,
  type HostRequestMap,
  type InitializeParams,
  type InitializeResult,
  type RequestMap,
  type RootsParams,
  type RootsResult,
  type SampleParams,
  type SessionOpenParams,
  type SessionOpenResult,
  type SidecarNotificationMap,
  type ToolsCallParams,
  type ToolsListResult,
} from './protocol.js';

/** How to start the sidecar. */
export interface SidecarOptions {
  /** The binary: default $MCP_SIDECAR_BIN, else the one of the platform package. */
  binary?: string;
  /** Arguments of the binary (default none: it speaks the host protocol). */
  args?: string[];
  /** The sidecar's environment (default the host's). Its children get an allowlisted part. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * The sidecar's stderr (its logs): 'inherit' (default), 'ignore', or a
   * function given each chunk of text.
   */
  stderr?: 'inherit' | 'ignore' | ((text: string) => void);
}

/** How a request is sent. */
export interface RequestOptions {
  /** Aborting sends $/cancelRequest; the request then rejects with SidecarError kind "cancelled". */
  signal?: AbortSignal;
}

/** How the sidecar process ended. */
export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Something to undo: a handler registration. */
export interface Disposable {
  dispose(): void;
}

/**
 * An error the sidecar answered: code and message as sent, data.kind says
 * what happened (see docs/protocol.md, "Errors").
 */
export class SidecarError extends Error {
  readonly code: number;
  readonly data: ErrorData | undefined;
  readonly method: string;

  constructor(method: string, code: number, message: string, data: ErrorData | undefined) {
    super(`${method}: ${message}`);
    this.name = 'SidecarError';
    this.method = method;
    this.code = code;
    this.data = data;
  }

  /** data.kind: the error's name for programs ("unknown_tool", "cancelled", ...). */
  get kind(): string | undefined {
    return this.data?.kind;
  }

  /** Whether the same request may succeed later. */
  get retryable(): boolean {
    return this.data?.retryable ?? false;
  }
}

/** An error a host-request handler throws to answer the server with it. */
export class HostRequestError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'HostRequestError';
    this.code = code;
    this.data = data;
  }
}

/** A handler of a request from the sidecar; signal aborts when the server gives up on it. */
export type HostRequestHandler<M extends keyof HostRequestMap> = (
  params: HostRequestMap[M]['params'],
  signal: AbortSignal,
) => HostRequestMap[M]['result'] | Promise<HostRequestMap[M]['result']>;

/**
 * A running sidecar and the connection to it.
 *
 * Register handlers (onNotification, onElicit, onRoots, onSample) before
 * initialize: servers are offered elicitation, roots and sampling only when
 * initialize.capabilities says so, and start right after session/open.
 */
export class SidecarClient {
  /** The sidecar's process id. */
  readonly pid: number;
  /** Settles when the sidecar process has ended. */
  readonly exited: Promise<ExitStatus>;

  readonly #child: ChildProcess;
  readonly #conn: MessageConnection;
  readonly #notificationHandlers = new Map<string, Set<(params: unknown) => void>>();
  #status: ExitStatus | undefined;
  #disposing: Promise<ExitStatus> | undefined;

  private constructor(child: ChildProcess, conn: MessageConnection, exited: Promise<ExitStatus>) {
    this.#child = child;
    this.#conn = conn;
    this.pid = child.pid ?? -1;
    this.exited = exited.then((s) => (this.#status = s));
  }

  /** Spawns the sidecar and connects to it; initialize is up to the caller. */
  static async start(options: SidecarOptions = {}): Promise<SidecarClient> {
    const binary = options.binary ?? sidecarBinary();
    const stderr = options.stderr ?? 'inherit';
    const child = spawn(binary, options.args ?? [], {
      stdio: ['pipe', 'pipe', typeof stderr === 'function' ? 'pipe' : stderr],
      env: options.env ?? process.env,
      cwd: options.cwd,
      windowsHide: true,
    });
    // A spawn failure (no such file) comes as an event, not an exception.
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    if (typeof stderr === 'function') {
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (d: string) => stderr(d));
    }
    const exited = new Promise<ExitStatus>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    // A write to a sidecar that died must not take the host down: the
    // pending requests reject instead.
    child.stdin?.on('error', () => {});
    const conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    const client = new SidecarClient(child, conn, exited);
    conn.listen();
    return client;
  }

  /**
   * Sends a request and resolves with its result. A JSON-RPC error rejects
   * with a SidecarError; an aborted signal sends $/cancelRequest.
   */
  request<M extends keyof RequestMap>(
    method: M,
    params: RequestMap[M]['params'],
    options: RequestOptions = {},
  ): Promise<RequestMap[M]['result']> {
    const { signal } = options;
    if (signal?.aborted) {
      return Promise.reject(new SidecarError(method, ERRORS.cancelled, 'request aborted before it was sent', { kind: 'cancelled', retryable: false }));
    }
    let source: CancellationTokenSource | undefined;
    let onAbort: (() => void) | undefined;
    if (signal) {
      source = new CancellationTokenSource();
      onAbort = () => source!.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
    }
    // vscode-jsonrpc takes a trailing undefined for a positional param, so
    // the token goes in only when there is one.
    const args: unknown[] = params === null || params === undefined ? [] : [params];
    if (source) args.push(source.token);
    const sent = this.#conn.sendRequest<RequestMap[M]['result']>(method, ...args);
    return sent.then(
      (result: RequestMap[M]['result']) => result,
      (err: unknown) => {
        throw toSidecarError(method, err);
      },
    ).finally(() => {
      if (signal && onAbort) signal.removeEventListener('abort', onAbort);
      source?.dispose();
    });
  }

  /**
   * initialize: configures the sidecar. Rejects when the sidecar speaks
   * another protocol version than this package's (docs/protocol.md,
   * "Versioning"). Sends initialized after the answer.
   */
  async initialize(params: InitializeParams, options?: RequestOptions): Promise<InitializeResult> {
    const result = await this.request('initialize', params, options);
    if (result.protocolVersion !== PROTOCOL_VERSION) {
      throw new Error(
        `mcp-sidecar ${result.serverInfo.version ?? ''} speaks host protocol version ${result.protocolVersion}; this client speaks ${PROTOCOL_VERSION}`,
      );
    }
    await this.#conn.sendNotification('initialized', {});
    return result;
  }

  /** session/open. */
  openSession(params: SessionOpenParams = {}, options?: RequestOptions): Promise<SessionOpenResult> {
    return this.request('session/open', params, options);
  }

  /** session/close: resolves once the session's server processes have ended. */
  async closeSession(sessionId: string, options?: RequestOptions): Promise<void> {
    await this.request('session/close', { sessionId }, options);
  }

  /** tools/list. */
  listTools(sessionId: string, servers?: string[], options?: RequestOptions): Promise<ToolsListResult> {
    return this.request('tools/list', servers ? { sessionId, servers } : { sessionId }, options);
  }

  /**
   * tools/call. The server answers a call with `task` with a
   * CreateTaskResult (MCP tasks), and any other with a CallToolResult
   * (docs/protocol.md, "tools/call"), so the result type follows the
   * params: params whose type may or may not have a task get the union.
   */
  callTool(params: ToolsCallParams & { task?: undefined }, options?: RequestOptions): Promise<CallToolResult>;
  callTool(params: ToolsCallParams & { task: NonNullable<ToolsCallParams['task']> }, options?: RequestOptions): Promise<CreateTaskResult>;
  callTool(params: ToolsCallParams, options?: RequestOptions): Promise<CallToolResult | CreateTaskResult>;
  callTool(params: ToolsCallParams, options?: RequestOptions): Promise<CallToolResult | CreateTaskResult> {
    return this.request('tools/call', params, options);
  }

  /**
   * Registers a handler of one notification of the sidecar. Handlers run in
   * arrival order.
   */
  onNotification<M extends keyof SidecarNotificationMap>(method: M, handler: (params: SidecarNotificationMap[M]) => void): Disposable {
    let handlers = this.#notificationHandlers.get(method);
    if (!handlers) {
      // vscode-jsonrpc keeps one handler per method (a second replaces the
      // first), so the client registers one that runs them all. It also
      // routes $/progress to progress handlers unless the method itself has
      // a handler, as it has here.
      const set = new Set<(params: unknown) => void>();
      this.#notificationHandlers.set(method, set);
      this.#conn.onNotification(method, (params: unknown) => {
        for (const h of [...set]) h(params);
      });
      handlers = set;
    }
    const h = handler as (params: unknown) => void;
    handlers.add(h);
    return { dispose: () => handlers.delete(h) };
  }

  /** Answers mcp/elicit (declare capabilities.elicitation in initialize). A later handler replaces this one. */
  onElicit(handler: (params: ElicitParams, signal: AbortSignal) => ElicitResult | Promise<ElicitResult>): Disposable {
    return this.#onHostRequest('mcp/elicit', handler);
  }

  /** Answers mcp/roots (declare capabilities.roots in initialize). */
  onRoots(handler: (params: RootsParams, signal: AbortSignal) => RootsResult | Promise<RootsResult>): Disposable {
    return this.#onHostRequest('mcp/roots', handler);
  }

  /** Answers mcp/sample (declare capabilities.sampling in initialize). */
  onSample(handler: (params: SampleParams, signal: AbortSignal) => CreateMessageResult | Promise<CreateMessageResult>): Disposable {
    return this.#onHostRequest('mcp/sample', handler);
  }

  /**
   * Answers mcp/authorize (declare capabilities.authorization in
   * initialize): open params.authorizationUrl for the user, answer {} (or
   * {redirectUrl} when the host catches the redirect, {cancelled: true} when
   * the user declined).
   */
  onAuthorize(handler: (params: AuthorizeParams, signal: AbortSignal) => AuthorizeResult | Promise<AuthorizeResult>): Disposable {
    return this.#onHostRequest('mcp/authorize', handler);
  }

  #onHostRequest<M extends keyof HostRequestMap>(method: M, handler: HostRequestHandler<M>): Disposable {
    // One handler answers a request: a second registration replaces the first.
    return this.#conn.onRequest(method, async (params: HostRequestMap[M]['params'], token: CancellationToken) => {
      const controller = new AbortController();
      const sub = token.onCancellationRequested(() => controller.abort(new Error(`${method} cancelled by the sidecar`)));
      if (token.isCancellationRequested) controller.abort();
      try {
        return await handler(params, controller.signal);
      } catch (err) {
        if (err instanceof HostRequestError) return new ResponseError(err.code, err.message, err.data);
        throw err;
      } finally {
        sub.dispose();
      }
    });
  }

  /**
   * Ends the sidecar the way the protocol says (shutdown, then exit) and
   * resolves once the process has ended, so that every server process it ran
   * is gone. A sidecar that does not end within timeoutMs is killed.
   */
  dispose(timeoutMs = 10_000): Promise<ExitStatus> {
    this.#disposing ??= this.#dispose(timeoutMs);
    return this.#disposing;
  }

  async #dispose(timeoutMs: number): Promise<ExitStatus> {
    const deadline = Date.now() + timeoutMs;
    if (this.#status === undefined) {
      try {
        await withTimeout(this.request('shutdown', null), timeoutMs);
        await this.#conn.sendNotification('exit');
      } catch {
        // A sidecar that is gone or stuck is ended below.
      }
      this.#child.stdin?.end();
      const left = Math.max(0, deadline - Date.now());
      const status = await withTimeout(this.exited, left).catch(() => undefined);
      if (status === undefined) {
        this.#child.kill('SIGKILL');
      }
    }
    const status = await this.exited;
    this.#conn.dispose();
    return status;
  }
}

function toSidecarError(method: string, err: unknown): unknown {
  if (err instanceof ResponseError) {
    return new SidecarError(method, err.code, err.message, err.data as ErrorData | undefined);
  }
  return err;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
