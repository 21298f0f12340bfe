// The host side of mcp-sidecar's protocol: spawn the sidecar, speak
// LSP-framed JSON-RPC to it over stdio, and type every message with the
// types generated from the protocol schema (protocol.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import {
  CancellationTokenSource,
  ResponseError,
  StreamMessageWriter,
  createMessageConnection,
  type CancellationToken,
  type MessageConnection,
  type ResponseMessage,
} from 'vscode-jsonrpc/node';

import { sidecarBinary } from './binary.js';
import {
  ERRORS,
  PROTOCOL_VERSION,
  isKnownContentBlock,
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
  type InputParams,
  type InputResult,
  type InitializeResult,
  type ListTasksResult,
  type RequestMap,
  type ResourceSubscribeParams,
  type ResourceUpdatedParams,
  type RootsParams,
  type RootsResult,
  type SampleParams,
  type ServerCatalog,
  type SessionOpenParams,
  type SessionOpenResult,
  type SidecarNotificationMap,
  type Task,
  type TaskParams,
  type TaskStatusParams,
  type TasksListParams,
  type Tool,
  type ToolsCallParams,
  type ToolsGetResult,
  type ToolsListParams,
  type ToolsListResult,
  type ToolsSearchParams,
  type ToolsSearchResult,
} from './protocol.js';
import { FrameReader, MalformedMessageError, type ReadFailure } from './reader.js';

/** The sidecar's own default frame limit; the frames it sends are far smaller. */
const DEFAULT_MAX_FRAME_BYTES = 64 << 20;

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
  /** Largest frame read from the sidecar (default 64 MiB); a larger one is skipped and fails alone. */
  maxFrameBytes?: number;
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

/** What callTool (without task) and taskResult answer: the server's CallToolResult, with helpers. */
export interface ToolResult extends CallToolResult {
  /**
   * The text of the result's text blocks, joined with newlines (other kinds
   * of content are left out): what most hosts give the model.
   */
  text(): string;
  /** structuredContent, as the type the tool's outputSchema describes (not checked); undefined when the server sent none. */
  structured<T = { [key: string]: unknown }>(): T | undefined;
}

/** The text of a CallToolResult's text blocks, joined with newlines (ToolResult.text). */
export function toolResultText(result: CallToolResult): string {
  const texts: string[] = [];
  for (const block of result.content ?? []) {
    if (isKnownContentBlock(block) && block.type === 'text') texts.push(block.text);
  }
  return texts.join('\n');
}

/**
 * Gives a CallToolResult its helpers, as members that are not enumerable:
 * JSON.stringify and deep equality still see the server's result as sent.
 * A server's own top-level member of either name is kept (and hides the
 * helper; toolResultText gives the same text).
 */
function withHelpers(result: CallToolResult): ToolResult {
  if (typeof result !== 'object' || result === null) return result;
  const helpers = {
    text(this: CallToolResult): string {
      return toolResultText(this);
    },
    structured(this: CallToolResult): unknown {
      return this.structuredContent;
    },
  };
  for (const [name, value] of Object.entries(helpers)) {
    if (!Object.prototype.hasOwnProperty.call(result, name)) {
      Object.defineProperty(result, name, { value, enumerable: false, configurable: true, writable: true });
    }
  }
  return result as ToolResult;
}

/** Which tools tools/list lists, and how. */
export interface ListToolsOptions {
  /** Only these servers. */
  servers?: string[];
  /** false: every tool without its schemas, with inputSchemaBytes and tokens instead (fetch definitions with getTools). */
  schemas?: boolean;
}

/** A tool as tools/list with schemas: false lists it. */
export type ToolSummary = Tool & {
  inputSchema?: undefined;
  outputSchema?: undefined;
  /** The length in bytes of the input schema the server sent. */
  inputSchemaBytes: number;
  /** The estimated tokens of the tool's full definition. */
  tokens: number;
};

/** tools/list's answer with schemas: false. */
export interface ToolsSummaryResult {
  tools: ToolSummary[];
  servers: ServerCatalog[];
}

/** How tools/search searches. */
export interface SearchToolsOptions {
  /** The most results (default 5; select: returns every tool it names). */
  limit?: number;
  /** Only these servers of the session. */
  servers?: string[];
}

/** A subscription to a resource (subscribeResource). */
export interface ResourceSubscription {
  /**
   * Stops the listener, and ends the session's subscription on the sidecar
   * (resources/unsubscribe) once no other subscription of this client to
   * the same resource is left. A second call does nothing.
   */
  unsubscribe(options?: RequestOptions): Promise<void>;
}

/** A handler of a request from the sidecar; signal aborts when the server gives up on it. */
export type HostRequestHandler<M extends keyof HostRequestMap> = (
  params: HostRequestMap[M]['params'],
  signal: AbortSignal,
) => HostRequestMap[M]['result'] | Promise<HostRequestMap[M]['result']>;

/**
 * A running sidecar and the connection to it.
 *
 * Register handlers (onNotification, onElicit, onRoots, onSample, onInput)
 * before initialize: servers are offered elicitation, roots and sampling,
 * and inputs are asked, only when initialize.capabilities says so, and
 * servers start right after session/open.
 */
export class SidecarClient {
  /** The sidecar's process id. */
  readonly pid: number;
  /** Settles when the sidecar process has ended. */
  readonly exited: Promise<ExitStatus>;

  readonly #child: ChildProcess;
  readonly #conn: MessageConnection;
  readonly #reader: FrameReader;
  readonly #writer: StreamMessageWriter;
  readonly #notificationHandlers = new Map<string, Set<(params: unknown) => void>>();
  readonly #malformedHandlers = new Set<(error: MalformedMessageError) => void>();
  /** Subscriptions to each resource (session, server, uri), for unsubscribe. */
  readonly #subscriptions = new Map<string, number>();
  #status: ExitStatus | undefined;
  #disposing: Promise<ExitStatus> | undefined;

  private constructor(child: ChildProcess, reader: FrameReader, writer: StreamMessageWriter, exited: Promise<ExitStatus>) {
    this.#child = child;
    this.#reader = reader;
    this.#writer = writer;
    this.#conn = createMessageConnection(reader, writer);
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
    // The reader reports what it cannot read to the client, which exists
    // only once the reader does.
    let onFailure: (failure: ReadFailure) => void = () => {};
    const reader = new FrameReader(child.stdout!, options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, (f) => onFailure(f));
    const client = new SidecarClient(child, reader, new StreamMessageWriter(child.stdin!), exited);
    onFailure = (f) => client.#readFailed(f);
    client.#conn.listen();
    return client;
  }

  /**
   * A message the reader could not read fails alone: the request it answers
   * rejects with the MalformedMessageError (through an error answer handed
   * to the connection, which holds the pending requests), a request of the
   * sidecar is answered -32700 so that its server is not left waiting, and
   * the onMalformed handlers are told.
   */
  #readFailed({ error, id, request }: ReadFailure): void {
    if (id !== undefined && request) {
      const answer: ResponseMessage = {
        jsonrpc: '2.0',
        id,
        error: { code: ERRORS.parse_error, message: `the host could not read the request: ${error.message}` },
      };
      // A sidecar that is gone is reported by the process's end.
      this.#writer.write(answer).catch(() => {});
    } else if (typeof id === 'number') {
      // The client's own request ids are numbers.
      const data = {};
      malformedAnswers.set(data, error);
      const answer: ResponseMessage = { jsonrpc: '2.0', id, error: { code: ERRORS.parse_error, message: error.message, data } };
      this.#reader.inject(answer);
    }
    if (this.#malformedHandlers.size === 0) {
      process.stderr.write(`mcp-sidecar client: ${error.message}\n`);
    }
    // After the reader's step, in order: a handler that throws does not
    // leave the reader half way through the bytes.
    const handlers = [...this.#malformedHandlers];
    queueMicrotask(() => {
      for (const h of handlers) h(error);
    });
  }

  /**
   * Registers a handler of the messages of the sidecar this client could
   * not read (each fails alone; see MalformedMessageError). Without one,
   * they are written to stderr.
   */
  onMalformed(handler: (error: MalformedMessageError) => void): Disposable {
    this.#malformedHandlers.add(handler);
    return { dispose: () => this.#malformedHandlers.delete(handler) };
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

  /**
   * tools/list: the session catalog, of every server or of `servers` (an
   * array, or in the options). With `schemas: false` every tool comes
   * without its schemas, with inputSchemaBytes and tokens: fetch the
   * definitions the model needs with getTools.
   */
  listTools(sessionId: string, options: ListToolsOptions & { schemas: false }, requestOptions?: RequestOptions): Promise<ToolsSummaryResult>;
  listTools(sessionId: string, options?: (ListToolsOptions & { schemas?: true | undefined }) | string[], requestOptions?: RequestOptions): Promise<ToolsListResult>;
  listTools(sessionId: string, options?: ListToolsOptions | string[], requestOptions?: RequestOptions): Promise<ToolsListResult | ToolsSummaryResult>;
  listTools(sessionId: string, options: ListToolsOptions | string[] = {}, requestOptions?: RequestOptions): Promise<ToolsListResult | ToolsSummaryResult> {
    const { servers, schemas } = Array.isArray(options) ? { servers: options, schemas: undefined } : options;
    const params: ToolsListParams = { sessionId };
    if (servers) params.servers = servers;
    if (schemas !== undefined) params.schemas = schemas;
    return this.request('tools/list', params, requestOptions);
  }

  /**
   * tools/search: the session catalog ranked for a query: free text,
   * `/regex/`, or `select:name1,name2` (docs/protocol.md, "tools/search").
   */
  searchTools(sessionId: string, query: string, options: SearchToolsOptions = {}, requestOptions?: RequestOptions): Promise<ToolsSearchResult> {
    const params: ToolsSearchParams = { sessionId, query };
    if (options.limit !== undefined) params.limit = options.limit;
    if (options.servers) params.servers = options.servers;
    return this.request('tools/search', params, requestOptions);
  }

  /** tools/get: the full definitions of tools by qualified name; names the catalog lacks are in `missing`. */
  getTools(sessionId: string, names: string[], options?: RequestOptions): Promise<ToolsGetResult> {
    return this.request('tools/get', { sessionId, names }, options);
  }

  /**
   * tools/call. The server answers a call with `task` with a
   * CreateTaskResult (MCP tasks), and any other with a CallToolResult
   * (docs/protocol.md, "tools/call"), so the result type follows the
   * params: params whose type may or may not have a task get the union. A
   * CallToolResult comes as a ToolResult: text() and structured().
   */
  callTool(params: ToolsCallParams & { task?: undefined }, options?: RequestOptions): Promise<ToolResult>;
  callTool(params: ToolsCallParams & { task: NonNullable<ToolsCallParams['task']> }, options?: RequestOptions): Promise<CreateTaskResult>;
  callTool(params: ToolsCallParams, options?: RequestOptions): Promise<ToolResult | CreateTaskResult>;
  async callTool(params: ToolsCallParams, options?: RequestOptions): Promise<ToolResult | CreateTaskResult> {
    const result = await this.request('tools/call', params, options);
    return params.task === undefined || params.task === null ? withHelpers(result as CallToolResult) : (result as CreateTaskResult);
  }

  /**
   * resources/subscribe, with a listener of the resource's
   * mcp/resourceUpdated: the updates of this session and server whose URI
   * is the subscribed one or starts with it (a server may name a part of a
   * subscribed resource). The sidecar keeps the subscription across the
   * server's reconnects and restarts until unsubscribe or the session's end.
   */
  async subscribeResource(
    params: ResourceSubscribeParams,
    listener: (update: ResourceUpdatedParams) => void,
    options?: RequestOptions,
  ): Promise<ResourceSubscription> {
    const { sessionId, server, uri } = params;
    // The listener goes first: an update may follow the answer at once.
    const handler = this.onNotification('mcp/resourceUpdated', (p) => {
      if (p.sessionId === sessionId && p.server === server && p.uri.startsWith(uri)) listener(p);
    });
    const key = JSON.stringify([sessionId, server, uri]);
    try {
      await this.request('resources/subscribe', { sessionId, server, uri }, options);
    } catch (err) {
      handler.dispose();
      throw err;
    }
    this.#subscriptions.set(key, (this.#subscriptions.get(key) ?? 0) + 1);
    let done = false;
    return {
      unsubscribe: async (unsubscribeOptions?: RequestOptions) => {
        if (done) return;
        done = true;
        handler.dispose();
        const left = (this.#subscriptions.get(key) ?? 1) - 1;
        if (left > 0) {
          this.#subscriptions.set(key, left);
          return;
        }
        this.#subscriptions.delete(key);
        await this.request('resources/unsubscribe', { sessionId, server, uri }, unsubscribeOptions);
      },
    };
  }

  /** tasks/get: the state of a task a callTool with `task` created. */
  getTask(params: TaskParams, options?: RequestOptions): Promise<Task> {
    return this.request('tasks/get', params, options);
  }

  /**
   * tasks/result: the task's CallToolResult, as a ToolResult. The server
   * may hold the answer until the task ends (meanwhile it may ask through
   * onElicit or onSample); aborting stops the wait, not the task.
   */
  async taskResult(params: TaskParams, options?: RequestOptions): Promise<ToolResult> {
    return withHelpers(await this.request('tasks/result', params, options));
  }

  /** tasks/list: one page of the server's tasks. */
  listTasks(params: TasksListParams, options?: RequestOptions): Promise<ListTasksResult> {
    return this.request('tasks/list', params, options);
  }

  /** tasks/cancel: ends a task; the answer is its state. */
  cancelTask(params: TaskParams, options?: RequestOptions): Promise<Task> {
    return this.request('tasks/cancel', params, options);
  }

  /** Registers a handler of mcp/taskStatus: a server's task changed state. */
  onTaskStatus(handler: (task: Task, params: TaskStatusParams) => void): Disposable {
    return this.onNotification('mcp/taskStatus', (p) => handler(p.params, p));
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

  /**
   * Answers mcp/input (declare capabilities.inputs in initialize): a server
   * of a VS Code file uses ${input:ID}; ask the user params.description
   * (hide the answer when params.password) and answer {value}, or
   * {cancelled: true} when the user declined. The sidecar asks once per
   * input and keeps the answer for as long as it runs.
   */
  onInput(handler: (params: InputParams, signal: AbortSignal) => InputResult | Promise<InputResult>): Disposable {
    return this.#onHostRequest('mcp/input', handler);
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

/** The data of the error answers the client makes for answers it could not read. */
const malformedAnswers = new WeakMap<object, MalformedMessageError>();

function toSidecarError(method: string, err: unknown): unknown {
  if (err instanceof ResponseError && typeof err.data === 'object' && err.data !== null) {
    const malformed = malformedAnswers.get(err.data);
    if (malformed) return malformed;
  }
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
