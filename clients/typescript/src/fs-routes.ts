/**
 * The thread's filesystem over `POST /threads/{id}/fs/{op}` (docs/http-api.md
 * "Filesystem"): typed calls, one per op, shared by the provider's handle
 * (`handle.filesystem`) and the direct client (`thread.files`). Every op goes through the
 * server's path jail and permission gates as the tools do; a refusal is a `B4boxError` with
 * the route's code (`not_found`, `is_directory`, `permission_denied`, `too_large`, ...).
 *
 * Reads are ranged: a file is read in chunks of at most 16 MiB (the route's bound) until
 * `eof`, so any size the server lets through is read whole; `maxBytes` reads one byte more
 * than the bound to tell "exactly at the cap" from "larger".
 */

import { B4boxError, WorkspaceReadLimitError } from "./errors.js";
import type { EntryKind, EntryStat, WalkedEntry } from "./sandbox-types.js";
import { type Connection, seg } from "./transport.js";

/** The route's bound on one read (B4_TOOLS_FS_READ_MAX). */
export const FS_READ_MAX = 16 * 1024 * 1024;

export interface FsStat extends EntryStat {
  readonly path: string;
  readonly mtimeMs: number;
}

export interface FsListEntry {
  /** The leaf name; a name that is not UTF-8 reads with U+FFFD (its bytes: `nameBytes`). */
  readonly name: string;
  readonly kind: EntryKind;
  readonly nameBytes?: Uint8Array;
}

export interface FsWalkEntry extends WalkedEntry {
  readonly mtimeMs: number;
}

interface RawEntry {
  kind: EntryKind;
  size?: number;
  executable?: boolean;
  mtimeMs?: number;
  target?: string;
  path?: string;
  pathBase64?: string;
  name?: string;
  nameBase64?: string;
}

interface ReadAnswer {
  length: number;
  size: number;
  eof: boolean;
  content: string;
}

const lossy = (b64: string): string => new TextDecoder().decode(Buffer.from(b64, "base64"));

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export class FsRoutes {
  private readonly base: string;

  /**
   * The thread's own fs routes, or with `via` a reader's (`POST
   * /threads/{id}/readers/{rid}/fs/{op}`: the same bodies and answers, the reads only);
   * `via.guard` runs before every call (a closed reader refuses there).
   */
  constructor(
    private readonly conn: Connection,
    threadId: string,
    private readonly via?: { readonly readerId: string; readonly guard: () => void },
  ) {
    this.base = `/threads/${seg(threadId)}${via ? `/readers/${seg(via.readerId)}` : ""}/fs`;
  }

  private call<T>(op: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    this.via?.guard();
    return this.conn.json<T>("POST", `${this.base}/${op}`, body, { signal });
  }

  async stat(path: string, signal?: AbortSignal): Promise<FsStat> {
    return statOf(await this.call<RawEntry>("stat", { path }, signal));
  }

  async lstat(path: string, signal?: AbortSignal): Promise<FsStat> {
    return statOf(await this.call<RawEntry>("lstat", { path }, signal));
  }

  async realPath(path: string, signal?: AbortSignal): Promise<string> {
    const r = await this.call<{ path?: string; pathBase64?: string }>("realPath", { path }, signal);
    return r.path ?? lossy(r.pathBase64 ?? "");
  }

  async list(path: string, signal?: AbortSignal): Promise<FsListEntry[]> {
    const r = await this.call<{ entries: RawEntry[] }>("list", { path }, signal);
    return r.entries.map((e) =>
      e.name !== undefined
        ? { name: e.name, kind: e.kind }
        : { name: lossy(e.nameBase64 ?? ""), kind: e.kind, nameBytes: new Uint8Array(Buffer.from(e.nameBase64 ?? "", "base64")) },
    );
  }

  async walk(path: string, opts: { maxEntries?: number; prune?: readonly string[] } = {}, signal?: AbortSignal): Promise<FsWalkEntry[]> {
    const body: Record<string, unknown> = { path };
    if (opts.maxEntries !== undefined) body.maxEntries = opts.maxEntries;
    if (opts.prune?.length) body.prune = opts.prune;
    const r = await this.call<{ entries: RawEntry[] }>("walk", body, signal);
    return r.entries.map((e) => ({ ...statOf(e), path: e.path ?? lossy(e.pathBase64 ?? "") }));
  }

  /**
   * The file's bytes from `offset`, all of them or at most `length`. With `maxBytes`, more
   * than that many bytes is a `WorkspaceReadLimitError` (op names the caller in its text).
   */
  async readBytes(path: string, opts: { offset?: number; length?: number; maxBytes?: number; op?: string } = {}, signal?: AbortSignal): Promise<Uint8Array> {
    const max = opts.maxBytes;
    if (max !== undefined && Number.isFinite(max) && (!Number.isSafeInteger(max) || max < 0))
      throw new RangeError("Invalid maxBytes limit");
    const bounded = max !== undefined && Number.isFinite(max);
    let want = opts.length ?? (bounded ? max + 1 : Infinity);
    let offset = opts.offset ?? 0;
    const parts: Uint8Array[] = [];
    for (;;) {
      const length = Math.min(want, FS_READ_MAX);
      const r = await this.call<ReadAnswer>("read", { path, offset, length, encoding: "base64" }, signal);
      const bytes = new Uint8Array(Buffer.from(r.content, "base64"));
      parts.push(bytes);
      offset += bytes.length;
      want -= bytes.length;
      if (r.eof || bytes.length === 0 || want <= 0) break;
    }
    const out = concat(parts);
    if (bounded && out.length > max) throw new WorkspaceReadLimitError(opts.op ?? "readFile", path, max);
    return out;
  }

  /** UTF-8 text (an invalid sequence reads as U+FFFD, as the tools read). */
  async readText(path: string, opts: { maxBytes?: number; op?: string } = {}, signal?: AbortSignal): Promise<string> {
    return new TextDecoder().decode(await this.readBytes(path, opts, signal));
  }

  async write(path: string, content: string | Uint8Array, signal?: AbortSignal): Promise<{ path: string; bytes: number }> {
    const body =
      typeof content === "string"
        ? { path, content, encoding: "utf8" }
        : { path, content: Buffer.from(content).toString("base64"), encoding: "base64" };
    return this.call("write", body, signal);
  }

  async mkdir(path: string, signal?: AbortSignal): Promise<void> {
    await this.call("mkdir", { path }, signal);
  }

  async remove(path: string, signal?: AbortSignal): Promise<void> {
    await this.call("remove", { path }, signal);
  }

  async touch(path: string, signal?: AbortSignal): Promise<void> {
    await this.call("touch", { path }, signal);
  }

  /** stat, or false for `not_found`. */
  async exists(path: string, signal?: AbortSignal): Promise<boolean> {
    try {
      await this.stat(path, signal);
      return true;
    } catch (e) {
      if (e instanceof B4boxError && e.code === "not_found") return false;
      throw e;
    }
  }
}

function statOf(e: RawEntry): FsStat {
  const s: FsStat = {
    path: e.path ?? (e.pathBase64 !== undefined ? lossy(e.pathBase64) : ""),
    kind: e.kind,
    size: e.size ?? 0,
    executable: e.executable ?? false,
    mtimeMs: e.mtimeMs ?? 0,
    ...(e.target !== undefined ? { target: e.target } : {}),
  };
  return s;
}
