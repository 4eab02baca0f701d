/**
 * @b4box/client: b4box from TypeScript.
 *
 * - `b4boxSandbox({url, token})`: b4box as B4.run's `SandboxProvider` (provider.ts), with
 *   `withWorkspaceReader` and the vendored contract types (sandbox-types.ts).
 * - `new B4box({url, token})`: the direct client in E2B's style (client.ts).
 * - `createSourceBundle(dir)` and friends: staged workspaces, digest-equal to `b4box bundle`
 *   (bundle.ts); `box.uploadSourceBundle(bundle)` stages one.
 * - `B4boxError`: every refusal, with the server's `code`.
 */
export * from "./sandbox-types.js";
export { B4boxError, WorkspaceReadLimitError } from "./errors.js";
export type { B4boxErrorInit } from "./errors.js";
export { b4boxSandbox, serverThreadId } from "./provider.js";
export type { B4boxSandboxOptions, B4boxSandboxProvider } from "./provider.js";
export { withWorkspaceReader } from "./reader.js";
export { B4box, Threads, Thread, Files, Commands, BackgroundProcess } from "./client.js";
export type {
  B4boxOptions,
  ThreadInfo,
  StagedWorkspace,
  CreateThreadOptions,
  CommandResult,
  RunOptions,
  StartOptions,
  ProcessInfo,
  LogsOptions,
  InspectOptions,
  Inspection,
  InspectAnswer,
  CheckAnswer,
  UploadAnswer,
} from "./client.js";
export type { FsStat, FsListEntry, FsWalkEntry } from "./fs-routes.js";
export type { OutputChunk, StreamName } from "./stream.js";
export { SseParser } from "./sse.js";
export type { SseEvent, SseItem } from "./sse.js";
export type { ConnectionOptions } from "./transport.js";
export {
  createSourceBundle,
  sourceBundleFromFiles,
  sourceDigest,
  formatSourceBundle,
  verifySourceBundle,
  portablePathProblem,
  SourceBundleError,
} from "./bundle.js";
export type { SourceBundle, SourceBundleFile, SourceInput, CaptureOptions } from "./bundle.js";
