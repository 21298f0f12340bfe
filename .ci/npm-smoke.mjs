// Run in a clean project where `npm install mcp-sidecar` installed the
// client and this platform's binary package: spawn the sidecar through the
// package, run the example server the binary embeds, call a tool.
import assert from 'node:assert/strict';

import { SidecarClient, sidecarBinary } from 'mcp-sidecar';

const binary = sidecarBinary();
assert.match(binary, /node_modules\/mcp-sidecar-[a-z0-9]+-[a-z0-9]+\/bin\/mcp-sidecar(\.exe)?$/, binary);
const client = await SidecarClient.start({ stderr: 'inherit' }); // the binary of the platform package
const init = await client.initialize({
  clientInfo: { name: 'npm-smoke', version: '1' },
  servers: { example: { command: binary, args: ['example-server'] } },
});
assert.equal(init.serverInfo.version, process.env.MCP_SIDECAR_EXPECT_VERSION, 'the stamped version');
const { sessionId } = await client.openSession({ startup: 'eager' });
const result = await client.callTool({ sessionId, name: 'mcp__example__add', arguments: { a: 2, b: 40 } });
assert.deepEqual(result.structuredContent, { sum: 42 });
const exit = await client.dispose();
assert.deepEqual(exit, { code: 0, signal: null });
console.log(`npm-smoke: ${binary} (${init.serverInfo.name} ${init.serverInfo.version}) called mcp__example__add: ${JSON.stringify(result.structuredContent)}`);
