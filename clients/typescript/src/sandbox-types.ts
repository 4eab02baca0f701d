/**
 * B4.run's sandbox contract, vendored.
 *
 * B4.run's packages (`@b4run/sandbox`, `@b4run/workspace`, formerly `@dawn-ai/*`) are not on
 * the npm registry, so this package carries its own copy of the types a custom provider
 * implements: `SandboxProvider` exactly as the Sandbox guide ("Custom providers") declares
 * it, and the handle, policy, backend and reader shapes it names, as B4.run's
 * `packages/workspace/src/sandbox-types.ts` and `types.ts` define them. TypeScript's
 * structural typing makes these assignable to B4.run's own: `b4boxSandbox()` plugs into a
 * `b4.config.ts` as is. Keep them in step with B4.run's; change nothing here for b4box's sake.
 */

/** The portable network policy: default-closed or open egress. */
export type SandboxNetworkPolicy =
  | { readonly mode: "allow"; readonly denylist?: readonly string[] }
  | { readonly mode: "deny"; readonly allowlist?: readonly string[] };

export interface SandboxResources {
  readonly memoryMb?: number;
  readonly cpus?: number;
  readonly timeoutMs?: number;
  readonly diskGb?: number;
}

export interface SandboxSecurityPolicy {
  readonly dropAllCapabilities?: boolean;
  readonly noNewPrivileges?: boolean;
  readonly readOnlyRootFilesystem?: boolean;
  readonly runAsNonRoot?: boolean | { readonly uid: number; readonly gid: number };
  readonly pidsLimit?: number;
}

/** What `acquire` receives: the thread's effective sandbox policy. */
export interface SandboxPolicy {
  readonly network: SandboxNetworkPolicy;
  /** The only environment injected; the host's is never inherited. */
  readonly env?: Readonly<Record<string, string>>;
  readonly resources?: SandboxResources;
  readonly security?: SandboxSecurityPolicy;
}

/** Passed to every backend call. */
export interface BackendContext {
  readonly signal: AbortSignal;
  readonly workspaceRoot: string;
}

export type EntryKind = "file" | "directory" | "symlink" | "other";

export interface EntryStat {
  readonly kind: EntryKind;
  readonly size: number;
  readonly executable: boolean;
  /** The raw link text, for symlinks only. */
  readonly target?: string;
}

export interface WalkedEntry extends EntryStat {
  /** Relative to the walked path, `/`-separated. */
  readonly path: string;
}

export interface WalkTreeOptions {
  readonly maxEntries: number;
  /** Names directly under the walked path that are reported but not descended. */
  readonly prune?: readonly string[];
}

export interface ReadOptions {
  /** A finite bound: more bytes than this is a `WorkspaceReadLimitError`. */
  readonly maxBytes?: number;
}

export interface BinaryReadRequest {
  readonly path: string;
  readonly maxBytes: number;
}

/**
 * The handle's filesystem. Paths are absolute and already resolved by the caller's path
 * jail; backends do not re-jail.
 */
export interface FilesystemBackend {
  readFile(path: string, ctx: BackendContext, options?: ReadOptions): Promise<string>;
  writeFile(path: string, content: string, ctx: BackendContext): Promise<{ readonly bytesWritten: number }>;
  listDir(path: string, ctx: BackendContext): Promise<string[]>;
  realPath(path: string, ctx: BackendContext): Promise<string>;
  readBinaryFile?(path: string, ctx: BackendContext, options?: ReadOptions): Promise<Uint8Array>;
  lstat?(path: string, ctx: BackendContext): Promise<EntryStat>;
  statFile?(path: string, ctx: BackendContext): Promise<{ readonly size: number; readonly mtimeMs: number }>;
  removeFile?(path: string, ctx: BackendContext): Promise<void>;
  touchFile?(path: string, ctx: BackendContext): Promise<void>;
  mkdir?(path: string, ctx: BackendContext): Promise<void>;
  walkTree?(path: string, ctx: BackendContext, options: WalkTreeOptions): Promise<WalkedEntry[]>;
  readBinaryFiles?(requests: readonly BinaryReadRequest[], ctx: BackendContext): Promise<Uint8Array[]>;
}

export interface RunCommandInput {
  readonly command: string;
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

export interface RunCommandResult {
  readonly stdout: string;
  readonly stderr: string;
  /** A non-zero exit is a result, never a rejection. */
  readonly exitCode: number;
}

export interface ExecBackend {
  runCommand(input: RunCommandInput, ctx: BackendContext): Promise<RunCommandResult>;
}

/** What `acquire` returns: the thread's live sandbox. */
export interface SandboxHandle {
  /** The logical thread id (never a hashed or escaped resource id). */
  readonly threadId: string;
  readonly filesystem: FilesystemBackend;
  readonly exec: ExecBackend;
  /** The absolute in-sandbox workspace path (`/workspace`). */
  readonly workspaceRoot: string;
}

/** A reader's filesystem: read members only. No write member and no exec exist on it. */
export interface ReadOnlyFilesystemBackend {
  lstat(path: string, ctx: BackendContext): Promise<EntryStat>;
  readFile(path: string, ctx: BackendContext, options?: ReadOptions): Promise<string>;
  readBinaryFile(path: string, ctx: BackendContext, options?: ReadOptions): Promise<Uint8Array>;
  listDir(path: string, ctx: BackendContext): Promise<string[]>;
  statFile(path: string, ctx: BackendContext): Promise<{ readonly size: number; readonly mtimeMs: number }>;
  walkTree?(path: string, ctx: BackendContext, options: WalkTreeOptions): Promise<WalkedEntry[]>;
  readBinaryFiles?(requests: readonly BinaryReadRequest[], ctx: BackendContext): Promise<Uint8Array[]>;
}

export interface OpenWorkspaceReaderInput {
  readonly threadId: string;
  readonly signal: AbortSignal;
  readonly runAsNonRoot?: SandboxSecurityPolicy["runAsNonRoot"];
}

export interface SandboxWorkspaceReader {
  readonly threadId: string;
  readonly workspaceRoot: string;
  readonly filesystem: ReadOnlyFilesystemBackend;
  /** Idempotent; reads after close are refused. */
  close(): Promise<void>;
}

export interface SandboxPreflightResult {
  readonly ok: boolean;
  readonly detail?: string;
  readonly warnings?: readonly string[];
}

/** B4.run's `SandboxProvider`, exactly as the Sandbox guide declares it. */
export interface SandboxProvider {
  readonly name: string;
  acquire(input: {
    readonly threadId: string;
    readonly policy: SandboxPolicy;
    readonly signal: AbortSignal;
  }): Promise<SandboxHandle>;
  release(threadId: string): Promise<void>;
  destroy(threadId: string): Promise<void>;
  preflight?(): Promise<SandboxPreflightResult>;
  openWorkspaceReader?(input: OpenWorkspaceReaderInput): Promise<SandboxWorkspaceReader>;
}
