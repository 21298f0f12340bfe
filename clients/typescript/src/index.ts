// mcp-sidecar (npm): a typed host of mcp-sidecar (docs/protocol.md).
export * from './protocol.js';
export { SidecarClient, SidecarError, HostRequestError, toolResultText } from './client.js';
export type {
  SidecarOptions,
  RequestOptions,
  ExitStatus,
  Disposable,
  HostRequestHandler,
  ToolResult,
  ListToolsOptions,
  ToolSummary,
  ToolsSummaryResult,
  SearchToolsOptions,
  ResourceSubscription,
} from './client.js';
export { MalformedMessageError } from './reader.js';
export { sidecarBinary, PLATFORM_PACKAGES } from './binary.js';
