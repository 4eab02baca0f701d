/**
 * `openWorkspaceReader` over b4box's reader routes (docs/http-api.md, "Readers"): `POST
 * /threads/{id}/readers` opens a reader on the server, its filesystem is the fs reads through
 * `POST /threads/{id}/readers/{rid}/fs/{op}` (the handle's read members, fs-backend.ts), and
 * `close()` is `DELETE /threads/{id}/readers/{rid}`.
 *
 * The contract (reference §1.4): the server's reader never acquires, starts or keeps the
 * thread's compute; writes are impossible (no change route exists for a reader, the server's
 * reader is read-only, and the filesystem here has no write member and there is no `exec`);
 * a thread with no workspace storage rejects (`B4_E2001`); `close()` is idempotent, reads
 * after it are refused before any request, and a close that fails throws and may be retried.
 * A reader the server expired (idle longer than its `idleTimeoutMs`) or closed with its
 * thread answers `reader_not_found`; closing it then is success.
 */

import { B4boxError } from "./errors.js";
import { ReadFilesystem } from "./fs-backend.js";
import { FsRoutes } from "./fs-routes.js";
import type { OpenWorkspaceReaderInput, SandboxProvider, SandboxWorkspaceReader } from "./sandbox-types.js";
import { type Connection, seg } from "./transport.js";

const ROOT = "/workspace";

/** The open's refusals in the contract's words. */
function openRefusal(conn: Connection, threadId: string, e: unknown): unknown {
  if (!(e instanceof B4boxError)) return e;
  if (e.code === "workspace_not_found" || e.code === "thread_not_found")
    return new B4boxError({
      status: e.status,
      code: "workspace_not_found",
      registryCode: "B4_E2001",
      message: `Sandbox unavailable: no workspace storage for thread "${threadId}".`,
      cause: e,
    });
  if ((e.status === 404 && e.code === "not_found") || e.code === "readers_not_supported")
    return new B4boxError({
      status: e.status,
      code: "not_supported",
      message:
        e.code === "readers_not_supported"
          ? e.message
          : `b4box at ${conn.url} does not serve workspace reads: set sandbox.workspaceRead to "http" in its b4box.json (docs/inspect.md)`,
      cause: e,
    });
  return e;
}

/** Open a reader of `serverId`'s workspace on the server (see the file's comment). */
export async function openReader(
  conn: Connection,
  threadId: string,
  serverId: string,
  signal?: AbortSignal,
  idleTimeoutMs?: number,
): Promise<SandboxWorkspaceReader> {
  let readerId: string;
  try {
    const body = idleTimeoutMs !== undefined ? { idleTimeoutMs } : undefined;
    readerId = (await conn.json<{ readerId: string }>("POST", `/threads/${seg(serverId)}/readers`, body, { signal })).readerId;
  } catch (e) {
    throw openRefusal(conn, threadId, e);
  }
  let closed = false;
  let removed = false;
  const guard = () => {
    if (closed) throw new Error(`Workspace reader for thread "${threadId}" is closed`);
  };
  const filesystem = new ReadFilesystem(new FsRoutes(conn, serverId, { readerId, guard }));
  return {
    threadId,
    workspaceRoot: ROOT,
    filesystem,
    close: async () => {
      closed = true;
      if (removed) return;
      try {
        await conn.json("DELETE", `/threads/${seg(serverId)}/readers/${seg(readerId)}`);
      } catch (e) {
        if (!(e instanceof B4boxError && (e.code === "reader_not_found" || e.code === "thread_not_found"))) throw e;
      }
      removed = true;
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
