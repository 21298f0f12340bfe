#!/usr/bin/env node
// An MCP server over stdio (newline-delimited JSON-RPC, MCP 2025-11-25) for
// the clients' tests against the real sidecar: every kind of content block
// (and one of a kind MCP does not have yet), tasks with status
// notifications, resource subscriptions and a URL elicitation. No
// dependencies: the Rust tests run it with the node that generates the
// types.
//
// Tools:
//   blocks          content of every kind: text, image, audio, resource_link,
//                   resource (text and blob), and {"type": "video"}
//   research {topic} as a task (execution.taskSupport "optional"): the
//                   CreateTaskResult, then notifications/tasks/status
//                   completed; tasks/get, tasks/result, tasks/list and
//                   tasks/cancel follow it. Without a task: the report at once.
//   touch {uri}     sends notifications/resources/updated for uri when it is
//                   subscribed, and answers how many subscriptions there are
//   ask_url         asks for a URL elicitation and answers with the action
import { createInterface } from 'node:readline';

const write = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const subscribed = new Set();
const tasks = new Map(); // taskId -> {task, topic}
let nextTask = 1;
let nextRequest = 1;
const waiting = new Map(); // our request id -> resolve

const now = () => new Date(Date.UTC(2026, 11, 1, 8, 0, 0)).toISOString();
const report = (topic, taskId) => ({
  content: [{ type: 'text', text: `# Report: ${topic}` }],
  structuredContent: { topic },
  ...(taskId ? { _meta: { 'io.modelcontextprotocol/related-task': { taskId } } } : {}),
});

const tools = [
  { name: 'blocks', description: 'Content of every kind.', inputSchema: { type: 'object' } },
  {
    name: 'research',
    description: 'A report on a topic, as a task.',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
    execution: { taskSupport: 'optional' },
  },
  {
    name: 'touch',
    description: 'Announce an update of a resource.',
    inputSchema: { type: 'object', properties: { uri: { type: 'string' } }, required: ['uri'] },
  },
  { name: 'ask_url', description: 'Ask for a URL elicitation.', inputSchema: { type: 'object' } },
];

const blocks = {
  content: [
    { type: 'text', text: 'first line', annotations: { audience: ['user'], priority: 0.5 }, 'x-extra': 1 },
    { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
    { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
    { type: 'resource_link', uri: 'file:///tmp/report.md', name: 'report.md', mimeType: 'text/markdown', size: 2048 },
    { type: 'resource', resource: { uri: 'file:///tmp/a.txt', mimeType: 'text/plain', text: 'embedded text' } },
    { type: 'resource', resource: { uri: 'file:///tmp/b.bin', blob: 'AAEC' } },
    { type: 'video', url: 'https://example.com/v.mp4', durationMs: 1200 },
    { type: 'text', text: 'second line' },
  ],
  structuredContent: { kinds: 8 },
};

async function call(params) {
  const args = params.arguments ?? {};
  switch (params.name) {
    case 'blocks':
      return blocks;
    case 'research': {
      if (!params.task) return report(args.topic);
      const taskId = `t-${nextTask++}`;
      const task = { taskId, status: 'working', ttl: params.task.ttl ?? 60000, createdAt: now(), lastUpdatedAt: now(), pollInterval: 1000 };
      tasks.set(taskId, { task, topic: args.topic });
      if (args.topic !== 'never') {
        // Done right after the answer: the status notification follows it.
        setImmediate(() => {
          task.status = 'completed';
          task.statusMessage = 'done';
          write({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...task } });
        });
      }
      return { task: { ...task } };
    }
    case 'touch': {
      if (subscribed.has(args.uri)) {
        write({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: args.uri } });
      }
      return { content: [{ type: 'text', text: `${subscribed.size} subscribed` }] };
    }
    case 'ask_url': {
      const id = `s-${nextRequest++}`;
      const answer = new Promise((resolve) => waiting.set(id, resolve));
      write({
        jsonrpc: '2.0',
        id,
        method: 'elicitation/create',
        params: { mode: 'url', message: 'Authorize the payment', elicitationId: 'e-42', url: 'https://example.com/consent?e=42' },
      });
      const res = await answer;
      return { content: [{ type: 'text', text: res.error ? `error ${res.error.code}` : res.result.action }] };
    }
  }
  throw Object.assign(new Error(`no tool ${params.name}`), { code: -32602 });
}

function taskOf(params) {
  const t = tasks.get(params?.taskId);
  if (!t) throw Object.assign(new Error(`no task ${params?.taskId}`), { code: -32602 });
  return t;
}

async function handle(msg) {
  const p = msg.params;
  switch (msg.method) {
    case 'initialize':
      return {
        protocolVersion: p.protocolVersion,
        capabilities: {
          tools: {},
          resources: { subscribe: true },
          tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
        },
        serverInfo: { name: 'clients-test-server', version: '1.0.0' },
      };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools };
    case 'tools/call':
      return call(p);
    case 'resources/list':
      return { resources: [] };
    case 'resources/subscribe':
      subscribed.add(p.uri);
      return {};
    case 'resources/unsubscribe':
      subscribed.delete(p.uri);
      return {};
    case 'tasks/get':
      return { ...taskOf(p).task };
    case 'tasks/result': {
      const t = taskOf(p);
      return report(t.topic, t.task.taskId);
    }
    case 'tasks/list':
      return { tasks: [...tasks.values()].map((t) => ({ ...t.task })) };
    case 'tasks/cancel': {
      const t = taskOf(p);
      t.task.status = 'cancelled';
      return { ...t.task };
    }
  }
  throw Object.assign(new Error(`method not found: ${msg.method}`), { code: -32601 });
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  const msg = JSON.parse(line);
  if (msg.method === undefined) {
    // An answer to our request.
    waiting.get(msg.id)?.(msg);
    waiting.delete(msg.id);
    return;
  }
  if (msg.id === undefined) return; // a notification
  handle(msg).then(
    (result) => write({ jsonrpc: '2.0', id: msg.id, result }),
    (err) => write({ jsonrpc: '2.0', id: msg.id, error: { code: err.code ?? -32603, message: err.message } }),
  );
});
lines.on('close', () => process.exit(0));
