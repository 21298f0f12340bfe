#!/usr/bin/env node
// Runs the mcp-sidecar binary of this platform's package with the same
// arguments and stdio, and exits as it did.
//
// A host that spawns `npx mcp-sidecar` holds this wrapper's pid, not the
// sidecar's: SIGTERM, SIGINT and SIGHUP sent to the wrapper go on to the
// sidecar, which ends its servers as on any of them (docs/protocol.md,
// "Lifecycle"), and the wrapper exits only once the sidecar has, with its
// exit status (or by its signal). SIGKILL cannot be forwarded: a sidecar
// whose wrapper was killed so ends when its stdin closes.
import { spawn } from 'node:child_process';
import { sidecarBinary } from '../dist/binary.js';

const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP'];

let binary;
try {
  binary = sidecarBinary();
} catch (err) {
  console.error(`mcp-sidecar: ${err.message}`);
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });

const forward = (signal) => {
  // Once the sidecar has exited there is no one to forward to (and its pid
  // may be another process's by now).
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    child.kill(signal);
  } catch {
    // It exited meanwhile: its exit event comes next.
  }
};
for (const signal of FORWARDED) process.on(signal, forward);

child.once('error', (err) => {
  console.error(`mcp-sidecar: ${binary}: ${err.message}`);
  process.exit(1);
});

child.once('exit', (code, signal) => {
  for (const s of FORWARDED) process.off(s, forward);
  if (signal) {
    // Die of the same signal, so that the host sees what the sidecar got.
    // With the handlers gone, its default action ends this process; one
    // whose default is to be ignored leaves the exit status 1.
    process.exitCode = 1;
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
