// Where the sidecar binary comes from: $MCP_SIDECAR_BIN, or the platform
// package npm installed next to this one (one optional dependency per
// platform, each with os and cpu set, as esbuild does).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** The npm package holding the binary, by `${process.platform}-${process.arch}`. */
export const PLATFORM_PACKAGES: Readonly<Record<string, string>> = {
  'linux-x64': 'mcp-sidecar-linux-x64',
  'linux-arm64': 'mcp-sidecar-linux-arm64',
  'darwin-x64': 'mcp-sidecar-darwin-x64',
  'darwin-arm64': 'mcp-sidecar-darwin-arm64',
  'win32-x64': 'mcp-sidecar-win32-x64',
  'win32-arm64': 'mcp-sidecar-win32-arm64',
};

/**
 * The path of the mcp-sidecar binary: $MCP_SIDECAR_BIN when set, else the
 * binary of this platform's package. Throws an error that says what to
 * install when there is none.
 */
export function sidecarBinary(platform: string = process.platform, arch: string = process.arch): string {
  const fromEnv = process.env['MCP_SIDECAR_BIN'];
  if (fromEnv) return fromEnv;
  const key = `${platform}-${arch}`;
  const pkg = PLATFORM_PACKAGES[key];
  if (!pkg) {
    throw new Error(`mcp-sidecar has no binary for ${key}: build it (go build github.com/mcp-sidecar/mcp-sidecar) and pass its path as binary or MCP_SIDECAR_BIN`);
  }
  const require = createRequire(import.meta.url);
  let dir: string;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(
      `${pkg} is not installed (npm installs it with mcp-sidecar unless optional dependencies are omitted): install it, or pass the binary's path as binary or MCP_SIDECAR_BIN`,
    );
  }
  const bin = path.join(dir, 'bin', platform === 'win32' ? 'mcp-sidecar.exe' : 'mcp-sidecar');
  if (!existsSync(bin)) throw new Error(`${pkg} has no binary at ${bin}`);
  return bin;
}
