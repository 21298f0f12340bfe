// Type tests of the client's API, checked by `tsc -p tsconfig.typetest.json`
// (run.sh): nothing here runs. A line that must not compile is marked with
// the ts-expect-error directive, which fails when the line compiles after all.
import {
  isKnownContentBlock,
  isKnownElicitRequestParams,
  type CallToolResult,
  type ContentBlock,
  type CreateTaskResult,
  type ElicitParams,
  type ElicitResult,
  type InputRequiredResult,
  type KnownContentBlock,
  type SidecarClient,
  type Task,
  type TaskStatus,
  type TextContent,
  type ToolResult,
  type ToolsCallParams,
  type ToolsListResult,
  type ToolsSearchResult,
  type ToolsSummaryResult,
  type UnknownContentBlock,
} from '../src/index.js';

/** true only when A and B are the same type (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectTrue<T extends true>(_: T): void {}

declare const client: SidecarClient;
declare const someParams: ToolsCallParams;

export async function callToolResultFollowsTask(): Promise<void> {
  // Without task: the server's CallToolResult, with its helpers.
  const plain = client.callTool({ sessionId: 's1', name: 'mcp__example__echo', arguments: { text: 'x' } });
  expectTrue<Equal<typeof plain, Promise<ToolResult>>>(true);
  const result = await plain;
  const asCallToolResult: CallToolResult = result;
  void asCallToolResult;
  result.content?.[0];
  const text: string = result.text();
  const sum = result.structured<{ sum: number }>();
  expectTrue<Equal<typeof sum, { sum: number } | undefined>>(true);
  void text;
  // @ts-expect-error a CallToolResult has no typed task
  result.task.taskId;

  // With task: the server's CreateTaskResult.
  const asTask = client.callTool({ sessionId: 's1', name: 'mcp__example__slow', task: { ttl: 60_000 } });
  expectTrue<Equal<typeof asTask, Promise<CreateTaskResult>>>(true);
  const created = await asTask;
  const taskId: string = created.task.taskId;
  void taskId;
  // @ts-expect-error a CreateTaskResult has no text()
  created.text();

  // Params that may or may not have a task: either result.
  const either = client.callTool(someParams);
  expectTrue<Equal<typeof either, Promise<ToolResult | CreateTaskResult>>>(true);

  // request() answers by RequestMap: the union, as the schema says (an
  // InputRequiredResult only for a host that declared capabilities.inputRequired).
  const raw = client.request('tools/call', someParams);
  expectTrue<Equal<typeof raw, Promise<CallToolResult | CreateTaskResult | InputRequiredResult>>>(true);

  // @ts-expect-error sessionId is required
  void client.callTool({ name: 'mcp__example__echo' });
}

/** Narrowed by the guard, a switch on type reaches every kind, and nothing else. */
export function describe(block: ContentBlock): string {
  // @ts-expect-error without the guard, type does not narrow: a later kind may have any members
  const notYet: string = block.text;
  void notYet;
  if (!isKnownContentBlock(block)) {
    const later: UnknownContentBlock = block;
    return `a ${later.type} block`;
  }
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
    case 'audio':
      return `${block.mimeType}, ${block.data.length} base64 bytes`;
    case 'resource_link':
      return `${block.name} at ${block.uri}${block.size === undefined ? '' : `, ${block.size} bytes`}`;
    case 'resource': {
      // Text or a blob: both are open objects, so test the member's type.
      const r = block.resource;
      return typeof r.text === 'string' ? r.text : `the bytes of ${r.uri}`;
    }
    default: {
      // Every known kind is handled above.
      const none: never = block;
      return none;
    }
  }
}

export function contentBlockShapes(): void {
  // A later MCP version's kind is a ContentBlock too.
  const later: ContentBlock = { type: 'video', url: 'https://example.com/v.mp4' };
  void later;
  // @ts-expect-error a text block has text
  const noText: TextContent = { type: 'text' };
  void noText;
  // @ts-expect-error KnownContentBlock has the kinds this version knows only
  const notKnown: KnownContentBlock = { type: 'video', url: 'https://example.com/v.mp4' };
  void notKnown;
}

export function tasks(task: Task): string {
  const status: TaskStatus = task.status;
  switch (status) {
    case 'working':
    case 'input_required':
      return 'running';
    case 'completed':
    case 'failed':
    case 'cancelled':
      return 'over';
    default: {
      const none: never = status;
      return none;
    }
  }
}

export async function taskHelpers(): Promise<void> {
  const params = { sessionId: 's1', server: 'everything', taskId: '4f1c' };
  const got = client.getTask(params);
  expectTrue<Equal<typeof got, Promise<Task>>>(true);
  const result = client.taskResult(params);
  expectTrue<Equal<typeof result, Promise<ToolResult>>>(true);
  const cancelled = client.cancelTask(params);
  expectTrue<Equal<typeof cancelled, Promise<Task>>>(true);
  client.onTaskStatus((t) => {
    const s: TaskStatus = t.status;
    void s;
  });
  // @ts-expect-error tasks/get needs the taskId
  void client.getTask({ sessionId: 's1', server: 'everything' });
  // @ts-expect-error not a status of MCP's tasks
  const paused: TaskStatus = 'paused';
  void paused;
}

export function elicit({ params }: ElicitParams): ElicitResult {
  if (!isKnownElicitRequestParams(params)) return { action: 'decline' };
  if (params.mode === 'url') {
    const url: string = params.url;
    const id: string = params.elicitationId;
    void url;
    void id;
    return { action: 'accept' };
  }
  // A form (mode "form" or absent): its fields are typed.
  const fields = Object.entries(params.requestedSchema.properties).map(([name, f]) => [name, f.default ?? (f.type === 'boolean' ? false : '')]);
  void fields;
  return { action: 'accept', content: { name: 'Ada', age: 36, ok: true, tags: ['a', 'b'] } };
}

export function elicitAnswers(): void {
  // @ts-expect-error a field's value is a string, number, boolean or list of strings
  const nested: ElicitResult = { action: 'accept', content: { where: { city: 'Paris' } } };
  // @ts-expect-error not an action of MCP's
  const maybe: ElicitResult = { action: 'maybe' };
  void nested;
  void maybe;
}

export async function catalogHelpers(): Promise<void> {
  const summary = client.listTools('s1', { schemas: false });
  expectTrue<Equal<typeof summary, Promise<ToolsSummaryResult>>>(true);
  const tool = (await summary).tools[0];
  if (tool) {
    const bytes: number = tool.inputSchemaBytes;
    const tokens: number = tool.tokens;
    const schema: undefined = tool.inputSchema;
    void [bytes, tokens, schema];
  }
  const full = client.listTools('s1', { servers: ['example'] });
  expectTrue<Equal<typeof full, Promise<ToolsListResult>>>(true);
  const byArray = client.listTools('s1', ['example']);
  expectTrue<Equal<typeof byArray, Promise<ToolsListResult>>>(true);
  const found = client.searchTools('s1', 'open a pull request', { limit: 3 });
  expectTrue<Equal<typeof found, Promise<ToolsSearchResult>>>(true);
  const { tools, missing } = await client.getTools('s1', ['mcp__github__create_pull_request']);
  void tools;
  const names: string[] = missing;
  void names;
  // @ts-expect-error limit is a number
  void client.searchTools('s1', 'x', { limit: '3' });
}
