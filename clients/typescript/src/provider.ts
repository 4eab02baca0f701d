/**
 * `b4boxSandbox({url, token})`: b4box as B4.run's `SandboxProvider`, the one line of a
 * `b4.config.ts` (`sandbox: {provider: b4boxSandbox({...})}`).
 *
 * - `acquire` creates the thread (`POST /threads`; `409 thread_exists` is the reattach) and
 *   takes its sandbox live with one filesystem call, so an admission refusal
 *   (`thread_refused`, `sandbox_unavailable`, ...) surfaces here, not at the first tool.
 *   Idempotent: every turn calls it and gets the same workspace back.
 * - `release` (`POST .../release`) keeps the workspace, `destroy` (`DELETE`) removes it; a
 *   thread that is not there is already released or destroyed.
 * - the handle's `filesystem` and `exec` are the fs routes and runBash (streamed, so an abort
 *   disconnects and the server kills the command).
 * - `preflight` asks `/healthz`, then what a thread would get (`GET /threads/{id}/check` on a
 *   probe thread it creates and deletes): `ok` and `detail` from the provider's preflight, a
 *   warning for every control that is not enforced.
 * - `openWorkspaceReader` opens a reader on the server (`POST /threads/{id}/readers`) and
 *   reads through it (reader.ts).
 *
 * Thread ids: B4.run's logical ids may hold `/` (b4box's ids may not), so the id on the
 * server is the logical one with `%`, `/` and control characters percent-escaped (and `.` /
 * `..` spelled `%2E`): injective, so two logical ids never share a sandbox. The handle keeps
 * the logical id.
 *
 * The policy `acquire` receives is not sent: b4box applies its own configuration (b4box.json,
 * or the thread resolver's answer). So that a B4.run app that asks for no network never runs
 * on a server that gives it one, `acquire` refuses (`policy_mismatch`) when the policy denies
 * the network and the thread's effective policy (`GET /threads/{id}/check`) allows it; once
 * per thread and provider object (`checkNetworkPolicy: false` skips it).
 */

import { randomUUID } from "node:crypto";
import { B4boxError } from "./errors.js";
import { Commands } from "./client.js";
import { FsRoutes } from "./fs-routes.js";
import { ReadFilesystem, wrap } from "./fs-backend.js";
import { openReader } from "./reader.js";
import type {
  BackendContext,
  ExecBackend,
  FilesystemBackend,
  OpenWorkspaceReaderInput,
  RunCommandInput,
  RunCommandResult,
  SandboxHandle,
  SandboxPolicy,
  SandboxPreflightResult,
  SandboxProvider,
  SandboxWorkspaceReader,
} from "./sandbox-types.js";
import { Connection, type ConnectionOptions, seg } from "./transport.js";

export interface B4boxSandboxOptions extends ConnectionOptions {
  /** The provider's `name` (B4.run's error texts use it; default `"b4box"`). */
  readonly name?: string;
  /** Thread metadata sent when a thread is created (a server's `sandbox.thread` resolver reads it). */
  readonly metadata?: Record<string, unknown> | ((input: { threadId: string; policy: SandboxPolicy }) => Record<string, unknown>);
  /** Refuse a thread whose effective network is open when the policy denies it (default true). */
  readonly checkNetworkPolicy?: boolean;
  /** Leave `openWorkspaceReader` out (the server does not serve `sandbox.workspaceRead: "http"`). */
  readonly workspaceReader?: boolean;
  /** A reader's idle timeout on the server, 1000-600000 ms (default the server's, 60000). */
  readonly readerIdleTimeoutMs?: number;
}

const ID_MAX_BYTES = 256;

/** The server's thread id for a logical id (see the file's comment). */
export function serverThreadId(threadId: string): string {
  if (typeof threadId !== "string" || threadId === "")
    throw new B4boxError({ status: 0, code: "invalid_thread_id", message: "a thread id must be a non-empty string" });
  let out = "";
  for (const ch of threadId) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) // a lone surrogate has no UTF-8 spelling: no id could be its own
      throw new B4boxError({ status: 0, code: "invalid_thread_id", message: `thread id ${JSON.stringify(threadId)} is not valid Unicode` });
    if (ch === "%" || ch === "/" || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
      for (const b of Buffer.from(ch, "utf8")) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
    else out += ch;
  }
  if (out === ".") out = "%2E";
  else if (out === "..") out = "%2E%2E";
  if (Buffer.byteLength(out, "utf8") > ID_MAX_BYTES)
    throw new B4boxError({ status: 0, code: "invalid_thread_id", message: `thread id ${JSON.stringify(threadId)} is longer than b4box's ${ID_MAX_BYTES} bytes once escaped` });
  return out;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Best effort (B4.run: `rm -f`, `touch`, `mkdir -p`): a refusal is ignored, no answer is not. */
async function quiet(f: () => Promise<void>): Promise<void> {
  try {
    await f();
  } catch (e) {
    if (e instanceof B4boxError && e.status >= 400 && e.status < 500) return;
    throw e;
  }
}

/** The handle's: the read members (fs-backend.ts) and the changes, over the thread's fs routes. */
class HandleFilesystem extends ReadFilesystem implements FilesystemBackend {
  constructor(fs: FsRoutes) {
    super(fs);
  }

  writeFile(path: string, content: string, ctx: BackendContext): Promise<{ bytesWritten: number }> {
    return wrap("writeFile", async () => ({ bytesWritten: (await this.fs.write(path, content, ctx.signal)).bytes }));
  }

  async realPath(path: string, ctx: BackendContext): Promise<string> {
    try {
      return await this.fs.realPath(path, ctx.signal);
    } catch (e) {
      // B4.run: "on failure return the input unchanged"; no answer at all still throws.
      if (e instanceof B4boxError && e.status >= 400 && e.status < 500) return path;
      throw e;
    }
  }

  removeFile(path: string, ctx: BackendContext): Promise<void> {
    return quiet(() => this.fs.remove(path, ctx.signal));
  }

  touchFile(path: string, ctx: BackendContext): Promise<void> {
    return quiet(() => this.fs.touch(path, ctx.signal));
  }

  mkdir(path: string, ctx: BackendContext): Promise<void> {
    return quiet(() => this.fs.mkdir(path, ctx.signal));
  }
}

class HandleExec implements ExecBackend {
  constructor(private readonly commands: Commands) {}

  async runCommand(input: RunCommandInput, ctx: BackendContext): Promise<RunCommandResult> {
    for (const k of Object.keys(input.env ?? {}))
      if (!ENV_NAME.test(k)) throw new Error(`Invalid environment variable name "${k}": keys must match /^[A-Za-z_][A-Za-z0-9_]*$/`);
    const r = await this.commands.run(input.command, { cwd: input.cwd ?? ctx.workspaceRoot, env: input.env, signal: ctx.signal });
    return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode };
  }
}

export interface B4boxSandboxProvider extends SandboxProvider {
  readonly connection: Connection;
  preflight(): Promise<SandboxPreflightResult>;
}

class B4boxProvider implements B4boxSandboxProvider {
  readonly name: string;
  readonly connection: Connection;
  private readonly checked = new Set<string>();
  openWorkspaceReader?: (input: OpenWorkspaceReaderInput) => Promise<SandboxWorkspaceReader>;

  constructor(private readonly options: B4boxSandboxOptions) {
    this.name = options.name ?? "b4box";
    this.connection = new Connection(options);
    if (options.workspaceReader !== false)
      this.openWorkspaceReader = (input) =>
        openReader(this.connection, input.threadId, serverThreadId(input.threadId), input.signal, options.readerIdleTimeoutMs);
  }

  async acquire(input: { readonly threadId: string; readonly policy: SandboxPolicy; readonly signal: AbortSignal }): Promise<SandboxHandle> {
    const id = serverThreadId(input.threadId);
    const m = this.options.metadata;
    const metadata = typeof m === "function" ? m({ threadId: input.threadId, policy: input.policy }) : m;
    try {
      await this.connection.json("POST", "/threads", { thread_id: id, ...(metadata ? { metadata } : {}) }, { signal: input.signal });
    } catch (e) {
      if (!(e instanceof B4boxError && e.code === "thread_exists")) throw e;
    }
    const fs = new FsRoutes(this.connection, id);
    // One call that needs the sandbox: admission and compute happen now, and it names the root.
    const workspaceRoot = await fs.realPath(".", input.signal);
    if (input.policy?.network?.mode === "deny" && this.options.checkNetworkPolicy !== false && !this.checked.has(id)) {
      const check = await this.connection.json<{ policy?: { network?: { mode?: string } } }>("GET", `/threads/${seg(id)}/check`, undefined, { signal: input.signal });
      if (check.policy?.network?.mode !== "deny")
        throw new B4boxError({
          status: 0,
          code: "policy_mismatch",
          message: `b4box would run thread ${JSON.stringify(input.threadId)} with network mode ${JSON.stringify(check.policy?.network?.mode)}, and the sandbox policy denies the network: set sandbox.network.mode "deny" in b4box.json`,
        });
      this.checked.add(id);
    }
    return {
      threadId: input.threadId,
      workspaceRoot,
      filesystem: new HandleFilesystem(fs),
      exec: new HandleExec(new Commands(this.connection, id)),
    };
  }

  async release(threadId: string): Promise<void> {
    await this.gone(() => this.connection.json("POST", `/threads/${seg(serverThreadId(threadId))}/release`));
  }

  async destroy(threadId: string): Promise<void> {
    const id = serverThreadId(threadId);
    this.checked.delete(id);
    await this.gone(() => this.connection.json("DELETE", `/threads/${seg(id)}`));
  }

  /** A thread that is not there is released and destroyed already. */
  private async gone(f: () => Promise<unknown>): Promise<void> {
    try {
      await f();
    } catch (e) {
      if (e instanceof B4boxError && e.code === "thread_not_found") return;
      throw e;
    }
  }

  async preflight(): Promise<SandboxPreflightResult> {
    const where = this.connection.url;
    try {
      await this.connection.json("GET", "/healthz");
    } catch (e) {
      return { ok: false, detail: `b4box at ${where} is not reachable: ${(e as Error).message}` };
    }
    const probe = `b4box-preflight-${randomUUID()}`;
    try {
      await this.connection.json("POST", "/threads", { thread_id: probe, metadata: { preflight: true } });
    } catch (e) {
      if (e instanceof B4boxError && e.status === 401) return { ok: false, detail: `b4box at ${where} refused the token: ${e.message}` };
      if (e instanceof B4boxError && e.status === 403)
        return { ok: true, warnings: [`b4box at ${where}: this principal may not create threads, so the enforced controls were not read (${e.message})`] };
      return { ok: false, detail: `b4box at ${where}: ${(e as Error).message}` };
    }
    try {
      const c = await this.connection.json<{
        ok: boolean;
        detail: string | null;
        warnings?: string[];
        controls?: { name: string; state: string; detail?: string }[];
      }>("GET", `/threads/${seg(probe)}/check`);
      const warnings = [
        ...(c.warnings ?? []),
        ...(c.controls ?? []).filter((x) => x.state === "not_enforced").map((x) => `${x.name}: NOT ENFORCED${x.detail ? ` (${x.detail})` : ""}`),
      ];
      return { ok: c.ok === true, ...(c.detail ? { detail: c.detail } : {}), warnings };
    } catch (e) {
      return { ok: false, detail: `b4box at ${where}: ${(e as Error).message}` };
    } finally {
      await this.connection.json("DELETE", `/threads/${seg(probe)}`).catch(() => {});
    }
  }
}

/** b4box as B4.run's `SandboxProvider`. */
export function b4boxSandbox(options: B4boxSandboxOptions): B4boxSandboxProvider {
  return new B4boxProvider(options);
}
