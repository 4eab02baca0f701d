/**
 * `openWorkspaceReader` over b4box: one `POST /threads/{id}/workspace/inspect` (served with
 * `sandbox.workspaceRead: "http"`) read at open, then a read-only view of that snapshot.
 *
 * Why this road: b4box has no reader routes (open a reader, read through it, close it); the
 * inspection is the one route that reads a thread's workspace through the server's own reader
 * (read-only storage, no compute started, nothing of the thread's sandbox touched) and
 * refuses a thread without storage (`404 workspace_not_found`). So the contract holds: no
 * acquire, writes impossible (the server's reader, and no write member here), a thread with
 * no workspace rejects, `close()` is idempotent and later reads are refused.
 *
 * What a snapshot cannot say (documented in README.md): the inspection carries UTF-8 text
 * files with their content and names the rest in `skipped` (executables, symlinks, binaries,
 * non-UTF-8, special files) without size or content. Those `lstat` with size 0 (symlinks with
 * no target) and reading one rejects with its reason; empty directories are not seen;
 * `statFile` has `mtimeMs` 0. The bounds are the route's: 10,000 entries, 16 MiB a file,
 * 32 MiB in all (a larger workspace rejects at open, `workspace_inspection_refused`).
 */

import { B4boxError, WorkspaceReadLimitError } from "./errors.js";
import { type InspectAnswer, Thread } from "./client.js";
import type {
  BackendContext,
  BinaryReadRequest,
  EntryStat,
  ReadOnlyFilesystemBackend,
  ReadOptions,
  SandboxProvider,
  SandboxWorkspaceReader,
  OpenWorkspaceReaderInput,
  WalkTreeOptions,
  WalkedEntry,
} from "./sandbox-types.js";
import type { Connection } from "./transport.js";

const ROOT = "/workspace";
const READ_OPTIONS = { unsupported: "skip" as const, maxEntries: 10_000, maxFileBytes: 16 * 1024 * 1024, maxTotalBytes: 32 * 1024 * 1024 };

type Node =
  | { readonly kind: "directory" }
  | { readonly kind: "file"; readonly text: string; readonly bytes: Uint8Array }
  | { readonly kind: "skipped"; readonly reason: string };

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

class SnapshotFilesystem implements ReadOnlyFilesystemBackend {
  private readonly nodes = new Map<string, Node>([["", { kind: "directory" }]]);

  constructor(
    answer: InspectAnswer,
    private readonly threadId: string,
    private readonly isClosed: () => boolean,
  ) {
    const enc = new TextEncoder();
    const addDirs = (p: string) => {
      for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) this.nodes.set(p.slice(0, i), { kind: "directory" });
    };
    for (const [p, text] of Object.entries(answer.inspection.files)) {
      addDirs(p);
      this.nodes.set(p, { kind: "file", text, bytes: enc.encode(text) });
    }
    for (const s of answer.inspection.skipped ?? []) {
      addDirs(s.path);
      this.nodes.set(s.path, { kind: "skipped", reason: s.reason });
    }
  }

  private rel(op: string, abs: string): string {
    if (this.isClosed()) throw new Error(`Workspace reader for thread "${this.threadId}" is closed`);
    const p = abs.replace(/\/+$/, "") || "/";
    if (p === ROOT) return "";
    if (!p.startsWith(`${ROOT}/`)) throw new Error(`${op} failed: ${abs} is outside the workspace ${ROOT}`);
    return p.slice(ROOT.length + 1);
  }

  private node(op: string, abs: string): { rel: string; node: Node } {
    const rel = this.rel(op, abs);
    const node = this.nodes.get(rel);
    if (!node) throw Object.assign(new Error(`${op} failed: ${abs}: No such file or directory`), { code: "ENOENT" });
    return { rel, node };
  }

  private bytes(op: string, abs: string, maxBytes?: number): Uint8Array {
    const { node } = this.node(op, abs);
    if (node.kind === "directory") throw Object.assign(new Error(`${op} failed: ${abs}: Is a directory`), { code: "EISDIR" });
    if (node.kind === "skipped")
      throw new Error(`${op} failed: ${abs} is ${node.reason === "executable" ? "an executable" : `a ${node.reason} entry`}: the b4box HTTP reader cannot read it`);
    if (maxBytes !== undefined && Number.isFinite(maxBytes) && node.bytes.length > maxBytes) throw new WorkspaceReadLimitError(op, abs, maxBytes);
    return node.bytes;
  }

  private statOf(node: Node): EntryStat {
    if (node.kind === "directory") return { kind: "directory", size: 0, executable: false };
    if (node.kind === "file") return { kind: "file", size: node.bytes.length, executable: false };
    if (node.reason === "symlink") return { kind: "symlink", size: 0, executable: false };
    if (node.reason === "other") return { kind: "other", size: 0, executable: false };
    return { kind: "file", size: 0, executable: node.reason === "executable" };
  }

  async lstat(path: string, _ctx: BackendContext): Promise<EntryStat> {
    return this.statOf(this.node("lstat", path).node);
  }

  async readFile(path: string, _ctx: BackendContext, options?: ReadOptions): Promise<string> {
    this.bytes("readFile", path, options?.maxBytes);
    return (this.nodes.get(this.rel("readFile", path)) as { text: string }).text;
  }

  async readBinaryFile(path: string, _ctx: BackendContext, options?: ReadOptions): Promise<Uint8Array> {
    return this.bytes("readBinaryFile", path, options?.maxBytes).slice();
  }

  async readBinaryFiles(requests: readonly BinaryReadRequest[], _ctx: BackendContext): Promise<Uint8Array[]> {
    return requests.map((r) => this.bytes("readBinaryFiles", r.path, r.maxBytes).slice());
  }

  async statFile(path: string, _ctx: BackendContext): Promise<{ size: number; mtimeMs: number }> {
    return { size: this.statOf(this.node("statFile", path).node).size, mtimeMs: 0 };
  }

  private children(rel: string): string[] {
    const prefix = rel ? `${rel}/` : "";
    const out: string[] = [];
    for (const k of this.nodes.keys())
      if (k !== rel && k.startsWith(prefix) && !k.slice(prefix.length).includes("/")) out.push(k.slice(prefix.length));
    return out.sort(cmp);
  }

  async listDir(path: string, _ctx: BackendContext): Promise<string[]> {
    const { rel, node } = this.node("listDir", path);
    if (node.kind !== "directory") throw Object.assign(new Error(`listDir failed: ${path}: Not a directory`), { code: "ENOTDIR" });
    return this.children(rel);
  }

  async walkTree(path: string, _ctx: BackendContext, options: WalkTreeOptions): Promise<WalkedEntry[]> {
    const { rel, node } = this.node("walkTree", path);
    if (node.kind !== "directory") throw new Error(`walkTree failed: ${path}: Not a directory`);
    const prune = new Set(options.prune ?? []);
    const out: WalkedEntry[] = [];
    const visit = (dir: string, under: string, top: boolean) => {
      for (const name of this.children(dir)) {
        const full = dir ? `${dir}/${name}` : name;
        const relPath = under ? `${under}/${name}` : name;
        const n = this.nodes.get(full)!;
        out.push({ path: relPath, ...this.statOf(n) });
        if (out.length > options.maxEntries) throw new B4boxError({ status: 0, code: "refused", message: "Workspace entries limit exceeded" });
        if (n.kind === "directory" && !(top && prune.has(name))) visit(full, relPath, false);
      }
    };
    visit(rel, "", true);
    return out;
  }
}

/** Open a snapshot reader of `serverId`'s workspace (see the file's comment). */
export async function openInspectReader(conn: Connection, threadId: string, serverId: string, signal?: AbortSignal): Promise<SandboxWorkspaceReader> {
  let answer: InspectAnswer;
  try {
    answer = await new Thread(conn, serverId).inspect(READ_OPTIONS, { signal });
  } catch (e) {
    if (e instanceof B4boxError && (e.code === "workspace_not_found" || e.code === "thread_not_found"))
      throw new B4boxError({
        status: e.status,
        code: "workspace_not_found",
        registryCode: "B4_E2001",
        message: `Sandbox unavailable: no workspace storage for thread "${threadId}".`,
        cause: e,
      });
    if (e instanceof B4boxError && e.status === 404 && e.code === "not_found")
      throw new B4boxError({
        status: 404,
        code: "not_supported",
        message: `b4box at ${conn.url} does not serve workspace reads: set sandbox.workspaceRead to "http" in its b4box.json (docs/inspect.md)`,
        cause: e,
      });
    throw e;
  }
  let closed = false;
  const filesystem = new SnapshotFilesystem(answer, threadId, () => closed);
  return {
    threadId,
    workspaceRoot: ROOT,
    filesystem,
    close: async () => {
      closed = true;
    },
  };
}

/**
 * B4.run's `withWorkspaceReader`: open, run `fn`, always close. Both failing is an
 * `AggregateError([bodyError, closeError])`; a close failure alone is thrown as is.
 */
export async function withWorkspaceReader<T>(
  provider: SandboxProvider,
  input: OpenWorkspaceReaderInput,
  fn: (reader: SandboxWorkspaceReader) => Promise<T>,
): Promise<T> {
  if (typeof provider.openWorkspaceReader !== "function")
    throw new Error(`Sandbox provider "${provider.name}" does not support reading a thread workspace`);
  const reader = await provider.openWorkspaceReader(input);
  let result: T;
  try {
    result = await fn(reader);
  } catch (bodyError) {
    try {
      await reader.close();
    } catch (closeError) {
      throw new AggregateError([bodyError, closeError], "Workspace read and reader close failed");
    }
    throw bodyError;
  }
  await reader.close();
  return result;
}
