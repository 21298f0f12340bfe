// mcp-sidecar (npm): a typed host of mcp-sidecar (docs/protocol.md).
export * from './protocol.js';
export { SidecarClient, SidecarError, HostRequestError } from './client.js';
export type { SidecarOptions, RequestOptions, ExitStatus, Disposable, HostRequestHandler } from './client.js';
export { sidecarBinary, PLATFORM_PACKAGES } from './binary.js';
