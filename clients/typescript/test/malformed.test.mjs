// A raw byte stream with a message of each kind the client cannot read,
// each followed by good ones, from a stand-in sidecar: every bad message
// fails alone (the request it answers rejects with MalformedMessageError, a
// request of the sidecar is answered -32700, onMalformed is told), and the
// connection goes on.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { MalformedMessageError, SidecarClient } from '../dist/index.js';

// The stand-in reads three requests, then writes the stream: bodies are
// given as base64 so that they can hold any byte. It reports the host's
// answer to its bad request "q" in a notification, then exits when stdin ends.
const fakeSidecar = `#!${process.execPath}
const frame = (body) => Buffer.concat([Buffer.from('Content-Length: ' + body.length + '\\r\\n\\r\\n'), body]);
const b = (s) => Buffer.from(s, 'latin1');
let buf = Buffer.alloc(0);
const ids = [];
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    const end = buf.indexOf('\\r\\n\\r\\n');
    if (end < 0) return;
    const n = Number(/Content-Length: (\\d+)/i.exec(buf.subarray(0, end).toString())[1]);
    if (buf.length < end + 4 + n) return;
    const msg = JSON.parse(buf.subarray(end + 4, end + 4 + n).toString());
    buf = buf.subarray(end + 4 + n);
    if (msg.method === undefined && msg.id === 'q') {
      process.stdout.write(frame(Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'test/answered', params: msg }))));
      continue;
    }
    if (msg.method === undefined) continue;
    if (msg.method === 'exit') process.exit(0);
    if (msg.method === 'shutdown') {
      process.stdout.write(frame(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: null }))));
      continue;
    }
    ids.push(msg.id);
    if (ids.length < 3) continue;
    process.stdout.write(Buffer.concat([
      frame(b('{"jsonrpc":"2.0","id":' + ids[0] + ',"result":{"t":"\\xff"}}')),
      frame(b('{"id":"q","jsonrpc":"2.0","method":"mcp/roots","params":{"x":"\\xfe"}}')),
      b('Content-Length: 5\\r\\nbogus\\r\\n\\r\\nhello'),
      frame(Buffer.alloc(5000, 'x')),
      frame(b('{"jsonrpc":"2.0","id":' + ids[1] + ',"result":{"a":')),
      frame(b('{"jsonrpc":"2.0","method":"mcp/log","params":{"data":"\\xff"}}')),
      frame(b('[1,2]')),
      frame(b('{"jsonrpc":"2.0","method":"mcp/log","params":{"sessionId":"s","server":"x","level":"info","data":"after"}}')),
      frame(b('{"jsonrpc":"2.0","id":' + ids[2] + ',"result":{"ok":true}}')),
    ]));
  }
});
process.stdin.on('end', () => process.exit(0));
`;

test('a message the client cannot read fails alone; the connection goes on', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fake-sidecar-'));
  const fake = path.join(dir, 'fake-sidecar.mjs');
  writeFileSync(fake, fakeSidecar);
  chmodSync(fake, 0o755);
  const client = await SidecarClient.start({ binary: fake, stderr: 'inherit', maxFrameBytes: 4096 });
  t.after(() => client.dispose(5000));
  const reported = [];
  client.onMalformed((e) => reported.push(e));
  const notes = [];
  const gotAfter = new Promise((resolve) =>
    client.onNotification('mcp/log', (p) => {
      notes.push(p);
      if (p.data === 'after') resolve();
    }),
  );
  const answered = new Promise((resolve) => client.onNotification('test/answered', resolve));

  const results = await Promise.allSettled([
    client.request('servers/status', { sessionId: 'a' }),
    client.request('servers/status', { sessionId: 'b' }),
    client.request('servers/status', { sessionId: 'c' }),
  ]);
  assert.equal(results[0].status, 'rejected');
  assert.ok(results[0].reason instanceof MalformedMessageError, String(results[0].reason));
  assert.match(results[0].reason.message, /^the sidecar sent a message that is not UTF-8: \{"jsonrpc":"2.0","id":\d+,"result":\{"t":"\uFFFD"\}\}$/);
  assert.equal(typeof results[0].reason.id, 'number');
  assert.equal(results[1].status, 'rejected');
  assert.ok(results[1].reason instanceof MalformedMessageError, String(results[1].reason));
  assert.match(results[1].reason.message, /^the sidecar sent a message that is not JSON \(/);
  assert.deepEqual(results[2], { status: 'fulfilled', value: { ok: true } });

  await gotAfter;
  assert.deepEqual(
    notes.map((n) => n.data),
    ['after'],
    'the notification that is not UTF-8 is not delivered; the one after it is',
  );
  const answer = await answered;
  assert.deepEqual(answer, {
    jsonrpc: '2.0',
    id: 'q',
    error: { code: -32700, message: 'the host could not read the request: the sidecar sent a message that is not UTF-8: {"id":"q","jsonrpc":"2.0","method":"mcp/roots","params":{"x":"\uFFFD"}}' },
  });
  assert.deepEqual(
    reported.map((e) => e.message.replace(/: \{.*$/, ': {...}')),
    [
      'the sidecar sent a message that is not UTF-8: {...}',
      'the sidecar sent a message that is not UTF-8: {...}',
      'the sidecar sent a bad frame header: header line "bogus" has no colon',
      'the sidecar sent a frame of 5000 bytes, over the limit of 4096',
      'the sidecar sent a message that is not JSON (Unexpected end of JSON input): {...}',
      'the sidecar sent a message that is not UTF-8: {...}',
      'the sidecar sent a message that is not a JSON object: [1,2]',
    ],
  );
  assert.ok(reported.every((e) => e instanceof MalformedMessageError));
});
