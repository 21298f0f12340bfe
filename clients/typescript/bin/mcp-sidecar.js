#!/usr/bin/env node
// Runs the mcp-sidecar binary of this platform's package with the same
// arguments and stdio, and exits with its status.
import { spawnSync } from 'node:child_process';
import { sidecarBinary } from '../dist/binary.js';

const result = spawnSync(sidecarBinary(), process.argv.slice(2), { stdio: 'inherit' });
if (result.error) {
  console.error(`mcp-sidecar: ${result.error.message}`);
  process.exit(1);
}
if (result.signal) process.kill(process.pid, result.signal);
process.exit(result.status ?? 1);
