// Type tests of the client's API, checked by `tsc -p tsconfig.typetest.json`
// (run.sh): nothing here runs. A line that must not compile is marked with
// the ts-expect-error directive, which fails when the line compiles after all.
import type { CallToolResult, CreateTaskResult, SidecarClient, ToolsCallParams } from '../src/index.js';

/** true only when A and B are the same type (not merely assignable). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectTrue<T extends true>(_: T): void {}

declare const client: SidecarClient;
declare const someParams: ToolsCallParams;

export async function callToolResultFollowsTask(): Promise<void> {
  // Without task: the server's CallToolResult.
  const plain = client.callTool({ sessionId: 's1', name: 'mcp__example__echo', arguments: { text: 'x' } });
  expectTrue<Equal<typeof plain, Promise<CallToolResult>>>(true);
  const result = await plain;
  result.content?.[0];
  // @ts-expect-error a CallToolResult has no typed task
  result.task.taskId;

  // With task: the server's CreateTaskResult.
  const asTask = client.callTool({ sessionId: 's1', name: 'mcp__example__slow', task: { ttl: 60_000 } });
  expectTrue<Equal<typeof asTask, Promise<CreateTaskResult>>>(true);
  const created = await asTask;
  const taskId: string = created.task.taskId;
  void taskId;

  // Params that may or may not have a task: either result.
  const either = client.callTool(someParams);
  expectTrue<Equal<typeof either, Promise<CallToolResult | CreateTaskResult>>>(true);

  // request() answers by RequestMap: the union, as the schema says.
  const raw = client.request('tools/call', someParams);
  expectTrue<Equal<typeof raw, Promise<CallToolResult | CreateTaskResult>>>(true);

  // @ts-expect-error sessionId is required
  void client.callTool({ name: 'mcp__example__echo' });
}
