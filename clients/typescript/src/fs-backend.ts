/**
 * B4.run's read-only filesystem backend over the fs routes (`FsRoutes`): the read members a
 * sandbox handle and a workspace reader share, worded as B4.run's backends word their
 * failures (`<op> failed: <reason>`, the route's code kept). The handle adds the changes
 * (provider.ts); a reader is exactly this, so it has no write member at all.
 */

import { B4boxError, WorkspaceReadLimitError } from "./errors.js";
import type { FsRoutes } from "./fs-routes.js";
import type {
  BackendContext,
  BinaryReadRequest,
  EntryStat,
  ReadOnlyFilesystemBackend,
  ReadOptions,
  WalkTreeOptions,
  WalkedEntry,
} from "./sandbox-types.js";

/** A refusal worded as B4.run's backends word theirs (`<op> failed: <reason>`), code kept. */
function failed(op: string, e: unknown): unknown {
  if (!(e instanceof B4boxError) || e.status === 0) return e;
  return new B4boxError({
    status: e.status,
    code: e.code,
    message: `${op} failed: ${e.message}`,
    registryCode: e.registryCode,
    errno: e.errno,
    details: e.details,
    cause: e,
  });
}

export async function wrap<T>(op: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof WorkspaceReadLimitError) throw e;
    throw failed(op, e);
  }
}

export class ReadFilesystem implements ReadOnlyFilesystemBackend {
  constructor(protected readonly fs: FsRoutes) {}

  readFile(path: string, ctx: BackendContext, options?: ReadOptions): Promise<string> {
    return wrap("readFile", () => this.fs.readText(path, { maxBytes: options?.maxBytes, op: "readFile" }, ctx.signal));
  }

  readBinaryFile(path: string, ctx: BackendContext, options?: ReadOptions): Promise<Uint8Array> {
    return wrap("readBinaryFile", () => this.fs.readBytes(path, { maxBytes: options?.maxBytes, op: "readBinaryFile" }, ctx.signal));
  }

  async readBinaryFiles(requests: readonly BinaryReadRequest[], ctx: BackendContext): Promise<Uint8Array[]> {
    const out: Uint8Array[] = [];
    for (const r of requests) out.push(await this.readBinaryFile(r.path, ctx, { maxBytes: r.maxBytes }));
    return out;
  }

  listDir(path: string, ctx: BackendContext): Promise<string[]> {
    return wrap("listDir", async () => (await this.fs.list(path, ctx.signal)).map((e) => e.name));
  }

  lstat(path: string, ctx: BackendContext): Promise<EntryStat> {
    return wrap("lstat", async () => {
      const s = await this.fs.lstat(path, ctx.signal);
      return { kind: s.kind, size: s.size, executable: s.executable, ...(s.target !== undefined ? { target: s.target } : {}) };
    });
  }

  statFile(path: string, ctx: BackendContext): Promise<{ size: number; mtimeMs: number }> {
    return wrap("statFile", async () => {
      const s = await this.fs.stat(path, ctx.signal);
      return { size: s.size, mtimeMs: s.mtimeMs };
    });
  }

  walkTree(path: string, ctx: BackendContext, options: WalkTreeOptions): Promise<WalkedEntry[]> {
    return wrap("walkTree", async () => {
      try {
        const entries = await this.fs.walk(path, { maxEntries: options.maxEntries, prune: options.prune }, ctx.signal);
        return entries.map((e) => ({ path: e.path, kind: e.kind, size: e.size, executable: e.executable, ...(e.target !== undefined ? { target: e.target } : {}) }));
      } catch (e) {
        // B4.run throws rather than truncates, with this text.
        if (e instanceof B4boxError && e.code === "too_large")
          throw new B4boxError({ status: e.status, code: "refused", message: "Workspace entries limit exceeded", cause: e });
        throw e;
      }
    });
  }
}
