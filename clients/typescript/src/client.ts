/**
 * The direct client, in E2B's style: `new B4box({url, token})`, then `box.threads.*`, and per
 * thread `thread.files.*`, `thread.commands.run/start`, `thread.inspect`, pause/resume,
 * release, delete. One method per route of docs/http-api.md; nothing is cached, so a
 * `Thread` is a name plus a connection and is cheap to make (`box.thread(id)`).
 *
 * Rules kept everywhere: a refusal is a `B4boxError` with the server's code; a command's
 * non-zero exit is a result (`CommandResult.exitCode`), never a throw; a tool failure
 * (`{ok: false}`: a denial, `oldText` not found) is a `B4boxError` with the tool's code.
 */

import { type SourceBundle, formatSourceBundle } from "./bundle.js";
import { B4boxError, protocolError, toolError, transportError } from "./errors.js";
import { FsRoutes } from "./fs-routes.js";
import { type OutputChunk, StreamCursor, streamEvents } from "./stream.js";
import { Connection, type ConnectionOptions, RawJson, seg } from "./transport.js";

export type B4boxOptions = ConnectionOptions;

/** A thread as the server shows it (snake_case, as sent). */
export interface ThreadInfo {
  readonly thread_id: string;
  readonly metadata: Record<string, unknown>;
  readonly parent_thread_id: string | null;
  readonly owner: string | null;
  readonly created_ms: number;
  readonly sandbox: {
    readonly provider: string;
    readonly state: "live" | "paused" | "kept" | "released";
    readonly run_in_flight: boolean;
    readonly paused: boolean;
    readonly paused_ms: number | null;
  };
  readonly workspace?: { readonly sourceDigest: string };
}

export interface StagedWorkspace {
  readonly sourceDigest: string;
  readonly environmentLinks?: readonly { readonly path: string; readonly target: string }[];
  readonly baseline?: "git";
}

export interface CreateThreadOptions {
  /** 1-256 bytes, no `/` or control characters; absent: the server names it (`thr_...`). */
  readonly id?: string;
  readonly metadata?: Record<string, unknown>;
  readonly parentId?: string;
  /** A staged source (`uploadSourceBundle`), with `sandbox.stagedWorkspaces` on the server. */
  readonly workspace?: StagedWorkspace;
  readonly signal?: AbortSignal;
}

/** runBash's result document (docs/tools.md). */
export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly cancelled: boolean;
  readonly truncated: boolean;
  readonly durationMs: number;
  readonly wallMs?: number;
  readonly cpuMs?: number | null;
  readonly peakMemoryBytes?: number | null;
  readonly maxProcesses?: number | null;
  readonly oomKilled?: boolean | null;
}

export interface RunOptions {
  /** Each chunk as the server sends it (text; the offsets are in `onChunk`). */
  readonly onStdout?: (text: string) => void;
  readonly onStderr?: (text: string) => void;
  readonly onChunk?: (chunk: OutputChunk) => void;
  /** Relative to the workspace (or absolute inside it): an existing directory. */
  readonly cwd?: string;
  /** Added to the policy's environment for this command. */
  readonly env?: Readonly<Record<string, string>>;
  /** At most the policy's `resources.timeoutMs`; none by default here (the policy's applies). */
  readonly timeoutMs?: number;
  /** The result's per-stream cap (the streamed chunks are never capped). */
  readonly maxOutputBytes?: number;
  /** Aborting disconnects; the server kills the command at its next write (keepalive). */
  readonly signal?: AbortSignal;
}

export interface StartOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Give it a stdin pipe (`sendStdin`); else it reads EOF. */
  readonly stdin?: boolean;
  readonly tag?: string;
  /** 0 or absent: none. */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

export interface ProcessInfo {
  readonly pid: number;
  readonly tag: string | null;
  readonly command: string;
  readonly state: "running" | "exited";
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly released: boolean;
  readonly stdinOpen: boolean;
  readonly truncated: boolean;
  readonly startedMs: number;
  readonly endedMs: number | null;
  readonly bytes: number;
}

export interface LogsOptions {
  /** Byte offset in the spool (default 0). */
  readonly from?: number;
  /** Keep reading until the process exits (default true). */
  readonly follow?: boolean;
  readonly signal?: AbortSignal;
  /** Reconnects after a dropped stream, from the next offset (default 3). */
  readonly reconnects?: number;
}

export type InspectOptions = Readonly<{
  root?: string;
  excludeRootDirectories?: readonly string[];
  expectedRootSymlinks?: Readonly<Record<string, string>>;
  ignorePrefixes?: readonly string[];
  maxEntries?: number;
  maxFileBytes?: number;
  maxTotalBytes?: number;
  consistent?: boolean;
  unsupported?: "refuse" | "skip";
  excludePaths?: readonly string[];
}>;

export interface Inspection {
  readonly files: Readonly<Record<string, string>>;
  readonly symlinks: Readonly<Record<string, string>>;
  readonly skipped?: readonly { readonly path: string; readonly reason: string }[];
  readonly totalBytes: number;
  readonly entries: number;
}

export interface InspectAnswer {
  readonly threadId: string;
  readonly sourceDigest: string | null;
  readonly intentDigest: string | null;
  readonly root?: string;
  readonly inspection: Inspection;
}

export interface CheckAnswer {
  readonly threadId: string;
  readonly provider: string;
  readonly ok: boolean;
  readonly detail: string | null;
  readonly policySource: "app" | "thread" | "pending";
  readonly policy: Record<string, unknown>;
  readonly warnings: readonly string[];
  readonly controls: readonly { readonly name: string; readonly state: string; readonly detail?: string }[];
}

export interface UploadAnswer {
  readonly digest: string;
  readonly status: "created" | "held";
}

function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** A tool call's result document: the result on `ok`, else the tool's error. */
function unwrap<T>(doc: unknown): T {
  if (typeof doc !== "object" || doc === null || !("ok" in doc)) throw protocolError("a tool answer without ok");
  const d = doc as { ok: boolean; result?: T };
  if (!d.ok) throw toolError(doc);
  return d.result as T;
}

export class B4box {
  readonly connection: Connection;
  readonly threads: Threads;

  constructor(options: B4boxOptions) {
    this.connection = new Connection(options);
    this.threads = new Threads(this.connection);
  }

  /** A handle on a thread by id, without a request. */
  thread(id: string): Thread {
    return new Thread(this.connection, id);
  }

  async health(signal?: AbortSignal): Promise<boolean> {
    const r = await this.connection.json<{ ok?: boolean }>("GET", "/healthz", undefined, { signal });
    return r?.ok === true;
  }

  /** `PUT /workspace/sources/{digest}`: stage a bundle; `held` when it was there already. */
  async uploadSourceBundle(bundle: SourceBundle, signal?: AbortSignal): Promise<UploadAnswer> {
    return this.connection.json<UploadAnswer>("PUT", `/workspace/sources/${seg(bundle.digest)}`, new RawJson(formatSourceBundle(bundle)), {
      signal,
      retryBusy: false,
      timeoutMs: null,
    });
  }
}

export class Threads {
  constructor(private readonly conn: Connection) {}

  async create(opts: CreateThreadOptions = {}): Promise<Thread> {
    const body = defined({
      thread_id: opts.id,
      metadata: opts.metadata,
      parent_thread_id: opts.parentId,
      workspace: opts.workspace,
    });
    const info = await this.conn.json<ThreadInfo>("POST", "/threads", body, { signal: opts.signal });
    return new Thread(this.conn, info.thread_id, info);
  }

  /** The thread, or `B4boxError` `thread_not_found`. */
  async get(id: string, signal?: AbortSignal): Promise<Thread> {
    const info = await this.conn.json<ThreadInfo>("GET", `/threads/${seg(id)}`, undefined, { signal });
    return new Thread(this.conn, info.thread_id, info);
  }

  async list(signal?: AbortSignal): Promise<ThreadInfo[]> {
    return (await this.conn.json<{ threads: ThreadInfo[] }>("GET", "/threads", undefined, { signal })).threads;
  }

  async delete(id: string, signal?: AbortSignal): Promise<void> {
    await this.conn.json("DELETE", `/threads/${seg(id)}`, undefined, { signal });
  }
}

export class Thread {
  readonly files: Files;
  readonly commands: Commands;

  constructor(
    private readonly conn: Connection,
    readonly id: string,
    /** What the server said when this object was made (create, get); `refresh()` re-reads. */
    readonly info?: ThreadInfo,
  ) {
    this.files = new Files(conn, id);
    this.commands = new Commands(conn, id);
  }

  private path(rest = ""): string {
    return `/threads/${seg(this.id)}${rest}`;
  }

  async refresh(signal?: AbortSignal): Promise<ThreadInfo> {
    return this.conn.json<ThreadInfo>("GET", this.path(), undefined, { signal });
  }

  /** Drop warm compute, keep the workspace (and kill background processes). */
  async release(signal?: AbortSignal): Promise<ThreadInfo> {
    return this.conn.json<ThreadInfo>("POST", this.path("/release"), undefined, { signal });
  }

  /** Compute, workspace, rows and child threads go. */
  async delete(signal?: AbortSignal): Promise<void> {
    await this.conn.json("DELETE", this.path(), undefined, { signal });
  }

  /** Freeze the live sandbox (409 `thread_not_live`, 501 `not_supported` on some providers). */
  async pause(signal?: AbortSignal): Promise<ThreadInfo> {
    return this.conn.json<ThreadInfo>("POST", this.path("/pause"), undefined, { signal, retryBusy: false });
  }

  async resume(signal?: AbortSignal): Promise<ThreadInfo> {
    return this.conn.json<ThreadInfo>("POST", this.path("/resume"), undefined, { signal });
  }

  /** Cancel the run in flight (409 `no_run_in_flight` when there is none). */
  async cancel(signal?: AbortSignal): Promise<void> {
    await this.conn.json("POST", this.path("/cancel"), undefined, { signal, retryBusy: false });
  }

  /** What is enforced for this thread (`GET /threads/{id}/check`). */
  async check(signal?: AbortSignal): Promise<CheckAnswer> {
    return this.conn.json<CheckAnswer>("GET", this.path("/check"), undefined, { signal });
  }

  /** The thread's network audit (`GET /threads/{id}/network`). */
  async network(signal?: AbortSignal): Promise<Record<string, unknown>> {
    return this.conn.json("GET", this.path("/network"), undefined, { signal });
  }

  /**
   * Read the workspace back (`POST /threads/{id}/workspace/inspect`: a read-only reader on
   * the server, no compute touched). With `expectedSourceDigest`, an answer about another
   * workspace is refused (`source_mismatch`), as one about another thread always is.
   */
  async inspect(options: InspectOptions = {}, check: { expectedSourceDigest?: string; signal?: AbortSignal } = {}): Promise<InspectAnswer> {
    const a = await this.conn.json<InspectAnswer>("POST", this.path("/workspace/inspect"), options, { signal: check.signal, timeoutMs: null });
    if (a?.threadId !== this.id)
      throw new B4boxError({ status: 200, code: "thread_mismatch", message: `the answer is about thread ${JSON.stringify(a?.threadId)}, not ${JSON.stringify(this.id)}` });
    if (check.expectedSourceDigest !== undefined && a.sourceDigest !== check.expectedSourceDigest)
      throw new B4boxError({ status: 200, code: "source_mismatch", message: `the workspace's source is ${a.sourceDigest}, not ${check.expectedSourceDigest}` });
    if (typeof a.inspection !== "object" || a.inspection === null || typeof a.inspection.files !== "object")
      throw protocolError("an inspection answer without inspection.files");
    return a;
  }

  /** Several tool calls in one run (`POST /threads/{id}/runs`): their result documents. */
  async run(calls: readonly { tool: string; args: Record<string, unknown> }[], signal?: AbortSignal): Promise<unknown[]> {
    return (await this.conn.json<{ results: unknown[] }>("POST", this.path("/runs"), { calls }, { signal, timeoutMs: null })).results;
  }

  /** One tool call's result document, as sent (`{ok, result}` or `{ok: false, error}`). */
  async tool(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<unknown> {
    return this.conn.json("POST", this.path(`/tools/${seg(name)}`), args, { signal, timeoutMs: null });
  }
}

/** `thread.files`: the fs routes, plus the line-range read and editFile tools. */
export class Files {
  private readonly fs: FsRoutes;

  constructor(
    private readonly conn: Connection,
    private readonly threadId: string,
  ) {
    this.fs = new FsRoutes(conn, threadId);
  }

  /** The file as UTF-8 text; with lines, only those (the readFile tool, 1-based, inclusive). */
  async read(path: string, opts: { startLine?: number; endLine?: number; signal?: AbortSignal } = {}): Promise<string> {
    if (opts.startLine === undefined && opts.endLine === undefined) return this.fs.readText(path, {}, opts.signal);
    const doc = await this.conn.json("POST", `/threads/${seg(this.threadId)}/tools/readFile`, defined({ path, startLine: opts.startLine, endLine: opts.endLine }), { signal: opts.signal });
    const text = unwrap<string>(doc);
    // The tool heads a range with "[<path> lines a-b of N]\n": the caller asked for the lines.
    const head = text.indexOf("]\n");
    return text.startsWith(`[${path} lines `) && head >= 0 ? text.slice(head + 2) : text;
  }

  async readBytes(path: string, opts: { offset?: number; length?: number; signal?: AbortSignal } = {}): Promise<Uint8Array> {
    return this.fs.readBytes(path, { offset: opts.offset, length: opts.length }, opts.signal);
  }

  /** Replace (or create, parents too) atomically; strings as UTF-8, bytes as they are. */
  async write(path: string, content: string | Uint8Array, signal?: AbortSignal): Promise<{ path: string; bytes: number }> {
    return this.fs.write(path, content, signal);
  }

  async writeFiles(files: readonly { path: string; content: string | Uint8Array }[], signal?: AbortSignal): Promise<{ path: string; bytes: number }[]> {
    const out = [];
    for (const f of files) out.push(await this.fs.write(f.path, f.content, signal));
    return out;
  }

  /** editFile: replace an exact span; `oldText` missing or repeated is a `tool_error`. */
  async edit(path: string, edit: { oldText: string; newText: string; replaceAll?: boolean }, signal?: AbortSignal): Promise<string> {
    const doc = await this.conn.json("POST", `/threads/${seg(this.threadId)}/tools/editFile`, defined({ path, ...edit }), { signal });
    return unwrap<string>(doc);
  }

  async list(path = ".", signal?: AbortSignal) {
    return this.fs.list(path, signal);
  }

  async exists(path: string, signal?: AbortSignal) {
    return this.fs.exists(path, signal);
  }

  async stat(path: string, signal?: AbortSignal) {
    return this.fs.stat(path, signal);
  }

  async lstat(path: string, signal?: AbortSignal) {
    return this.fs.lstat(path, signal);
  }

  async realPath(path: string, signal?: AbortSignal) {
    return this.fs.realPath(path, signal);
  }

  async walk(path = ".", opts: { maxEntries?: number; prune?: readonly string[]; signal?: AbortSignal } = {}) {
    return this.fs.walk(path, opts, opts.signal);
  }

  async makeDir(path: string, signal?: AbortSignal) {
    return this.fs.mkdir(path, signal);
  }

  /** A file, link or empty directory; a missing path is success. */
  async remove(path: string, signal?: AbortSignal) {
    return this.fs.remove(path, signal);
  }

  async touch(path: string, signal?: AbortSignal) {
    return this.fs.touch(path, signal);
  }
}

/** Consume a streamed runBash answer; the `exit` event is authoritative. */
async function runStreamed(body: AsyncIterable<Uint8Array>, opts: RunOptions): Promise<CommandResult> {
  const cursor = new StreamCursor();
  for await (const ev of streamEvents(body)) {
    if (ev.type === "chunk") {
      const c = cursor.take(ev.chunk);
      if (!c) continue;
      opts.onChunk?.(c);
      if (c.stream === "stdout") opts.onStdout?.(c.text);
      else opts.onStderr?.(c.text);
    } else if (ev.type === "exit") {
      return unwrap<CommandResult>(ev.data);
    }
  }
  throw transportError("runBash: the stream ended without an exit event (the command's outcome is unknown)");
}

export class Commands {
  constructor(
    private readonly conn: Connection,
    private readonly threadId: string,
  ) {}

  private path(rest: string): string {
    return `/threads/${seg(this.threadId)}${rest}`;
  }

  /**
   * Run a command to its end (runBash, streamed as Server-Sent Events): chunks go to
   * `onStdout`/`onStderr` as they come, the result carries the exit code. A denial or bad
   * argument is a `B4boxError`; a run in flight on the thread is waited for (`busyRetryMs`).
   */
  async run(command: string, opts: RunOptions = {}): Promise<CommandResult> {
    const body = JSON.stringify(defined({ command, cwd: opts.cwd, env: opts.env, timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes }));
    const res = await this.conn.sendRetrying({ method: "POST", path: this.path("/tools/runBash"), body, accept: "text/event-stream", signal: opts.signal, timeoutMs: null });
    if (res.status !== 200 || !(res.header("content-type") ?? "").startsWith("text/event-stream"))
      return unwrap<CommandResult>(await this.conn.answer(res, "POST", "runBash"));
    try {
      return await runStreamed(res.body, opts);
    } catch (e) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (e instanceof B4boxError) throw e;
      throw transportError(`runBash: the stream was cut (the command's outcome is unknown): ${(e as Error)?.message ?? e}`, e);
    } finally {
      await res.discard();
    }
  }

  /** Start a background process (`POST /threads/{id}/processes`). */
  async start(command: string, opts: StartOptions = {}): Promise<BackgroundProcess> {
    const body = defined({ command, cwd: opts.cwd, env: opts.env, stdin: opts.stdin, tag: opts.tag, timeoutMs: opts.timeoutMs });
    const r = await this.conn.json<{ pid: number; tag: string | null }>("POST", this.path("/processes"), body, { signal: opts.signal });
    return new BackgroundProcess(this.conn, this.threadId, r.pid, r.tag);
  }

  /** The thread's processes, oldest first. */
  async list(signal?: AbortSignal): Promise<ProcessInfo[]> {
    return (await this.conn.json<{ processes: ProcessInfo[] }>("GET", this.path("/processes"), undefined, { signal })).processes;
  }

  /** Reconnect to a process by its pid (b4box's number in the thread). */
  async connect(pid: number, signal?: AbortSignal): Promise<BackgroundProcess> {
    const info = await this.conn.json<ProcessInfo>("GET", this.path(`/processes/${pid}`), undefined, { signal });
    return new BackgroundProcess(this.conn, this.threadId, info.pid, info.tag);
  }
}

export class BackgroundProcess {
  constructor(
    private readonly conn: Connection,
    private readonly threadId: string,
    readonly pid: number,
    readonly tag: string | null,
  ) {}

  private path(rest = ""): string {
    return `/threads/${seg(this.threadId)}/processes/${this.pid}${rest}`;
  }

  async info(signal?: AbortSignal): Promise<ProcessInfo> {
    return this.conn.json<ProcessInfo>("GET", this.path(), undefined, { signal });
  }

  /**
   * Its output (stdout and stderr interleaved) from `from`, as chunks; with `follow` (the
   * default) until it exits, reconnecting from the next offset when the stream drops.
   */
  async *logs(opts: LogsOptions = {}): AsyncGenerator<OutputChunk> {
    const follow = opts.follow ?? true;
    const cursor = new StreamCursor(opts.from ?? 0);
    let reconnects = opts.reconnects ?? 3;
    for (;;) {
      const q = `?from=${cursor.next.stdout}${follow ? "&follow=1" : ""}`;
      const res = await this.conn.send({ method: "GET", path: this.path(`/logs${q}`), accept: "text/event-stream", signal: opts.signal, timeoutMs: null });
      if (res.status !== 200) await this.conn.answer(res, "GET", "logs");
      let finished = false;
      let dropped: unknown;
      try {
        for await (const ev of streamEvents(res.body)) {
          if (ev.type === "chunk") {
            const c = cursor.take(ev.chunk);
            if (c) yield c;
          } else if (ev.type === "exit" || ev.type === "end") {
            finished = true;
            break;
          }
        }
      } catch (e) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        if (e instanceof B4boxError) throw e; // malformed or failed: not a dropped connection
        dropped = e;
      } finally {
        await res.discard();
      }
      if (finished || !follow) return;
      // The stream ended (or dropped) before the exit event: go on from the next offset.
      if (reconnects-- <= 0)
        throw new B4boxError({ status: 0, code: "connection_failed", message: "the log stream ended before the process exited", cause: dropped });
    }
  }

  /** Its output bytes from `from` (plain route, at most 4 MiB a call) and where to ask next. */
  async readLogs(from = 0, signal?: AbortSignal): Promise<{ data: Uint8Array; nextOffset: number; state: string | null }> {
    const res = await this.conn.send({ method: "GET", path: this.path(`/logs?from=${from}`), signal });
    if (res.status !== 200) await this.conn.answer(res, "GET", "logs");
    const data = await res.bytes();
    const next = Number(res.header("x-b4box-next-offset"));
    return { data, nextOffset: Number.isSafeInteger(next) ? next : from + data.length, state: res.header("x-b4box-process-state") };
  }

  /** Write to its stdin (started with `stdin: true`); `eof` closes the pipe after. */
  async sendStdin(data: string | Uint8Array, opts: { eof?: boolean; signal?: AbortSignal } = {}): Promise<void> {
    const body = typeof data === "string" ? { text: data } : { b64: Buffer.from(data).toString("base64") };
    await this.conn.json("POST", this.path("/stdin"), defined({ ...body, eof: opts.eof }), { signal: opts.signal });
  }

  async closeStdin(signal?: AbortSignal): Promise<void> {
    await this.conn.json("POST", this.path("/stdin"), { eof: true }, { signal });
  }

  /** Signal every process the command started (TERM, KILL, INT, HUP, ...). */
  async signal(sig: string, signal?: AbortSignal): Promise<void> {
    await this.conn.json("POST", this.path("/signal"), { signal: sig }, { signal });
  }

  async kill(signal?: AbortSignal): Promise<void> {
    return this.signal("KILL", signal);
  }

  /**
   * Wait for it to exit and answer its final record. With `timeoutMs`, the record as it is
   * at that deadline (`state` says which); without, it waits as long as it runs.
   */
  async wait(opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ProcessInfo> {
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    for (;;) {
      // The route waits at most 600000 ms a call: a longer wait asks again.
      const left = Math.round(Math.max(0, Math.min(600_000, deadline - Date.now())));
      const info = await this.conn.json<ProcessInfo>("POST", this.path(`/wait?timeoutMs=${left}`), undefined, { signal: opts.signal, timeoutMs: null });
      if (info.state === "exited" || Date.now() >= deadline) return info;
    }
  }

  /** Kill it if it runs and forget its record and output. */
  async delete(signal?: AbortSignal): Promise<void> {
    await this.conn.json("DELETE", this.path(), undefined, { signal });
  }
}
