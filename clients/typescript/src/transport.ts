/**
 * One HTTP road to a b4box server: global `fetch` for `http(s)://` URLs, `node:http` with
 * `socketPath` for `unix:/abs/path` URLs (b4box's `server.listen` spelling). No runtime
 * dependency. Everything above this file sees the same `HttpResponse`, whatever the road.
 *
 * Errors: a non-2xx answer is a `B4boxError` with the server's code (`refusalError`); no
 * answer is `connection_failed`; the caller's `signal` aborting rejects with its reason (an
 * `AbortError`), the request timeout with `B4boxError` code `timeout`.
 */

import http from "node:http";
import { B4boxError, refusalError, transportError } from "./errors.js";

export interface ConnectionOptions {
  /** `http://host:port`, `https://...` or `unix:/abs/path.sock`. */
  readonly url: string;
  /** Sent as `Authorization: Bearer <token>` (the server's `threadAccess` tokens). */
  readonly token?: string;
  /** Extra headers on every request (`traceparent`, a proxy's). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Bound on one plain request, headers and body (default 30000). Streams have none. */
  readonly requestTimeoutMs?: number;
  /**
   * How long a refusal `409 run_in_flight` (the thread's run slot is held) is retried, with
   * backoff, before it is thrown (default 30000; 0: never retried). The refusal is decided
   * before anything runs, so retrying it repeats nothing, commands included.
   */
  readonly busyRetryMs?: number;
}

export interface HttpRequest {
  readonly method: string;
  /** Path and query, already percent-encoded. */
  readonly path: string;
  /** A JSON text: sent with `Content-Type: application/json`. */
  readonly body?: string;
  readonly accept?: string;
  readonly signal?: AbortSignal;
  /** Override the connection's timeout; `null`: none (a stream, a long wait). */
  readonly timeoutMs?: number | null;
}

export interface HttpResponse {
  readonly status: number;
  header(name: string): string | null;
  /** The body as it arrives. Iterate it once, or call `text()`/`bytes()`/`discard()`. */
  readonly body: AsyncIterable<Uint8Array>;
  text(): Promise<string>;
  bytes(): Promise<Uint8Array>;
  discard(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_BUSY_RETRY_MS = 30_000;

function parseUrl(url: string): { socketPath?: string; base?: string } {
  if (url.startsWith("unix:")) {
    const socketPath = url.slice("unix:".length);
    if (!socketPath.startsWith("/")) throw new TypeError(`b4box url ${url}: a unix socket path must be absolute`);
    return { socketPath };
  }
  const u = new URL(url);
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new TypeError(`b4box url ${url}: expected http://, https:// or unix:/path`);
  return { base: url.replace(/\/+$/, "") };
}

async function collect(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of body) {
    parts.push(c);
    n += c.length;
  }
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function makeResponse(
  status: number,
  header: (name: string) => string | null,
  body: AsyncIterable<Uint8Array>,
  cancel: () => void,
): HttpResponse {
  return {
    status,
    header,
    body,
    bytes: () => collect(body),
    text: async () => new TextDecoder().decode(await collect(body)),
    discard: async () => cancel(),
  };
}

/** A response whose body was read already (to look at its code), as a response again. */
function buffered(res: HttpResponse, text: string): HttpResponse {
  const bytes = new TextEncoder().encode(text);
  return makeResponse(res.status, res.header, (async function* () {
    yield bytes;
  })(), () => {});
}

export class Connection {
  readonly url: string;
  readonly busyRetryMs: number;
  private readonly socketPath: string | undefined;
  private readonly base: string | undefined;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(options: ConnectionOptions) {
    if (!options || typeof options.url !== "string") throw new TypeError("b4box: url is required");
    const { socketPath, base } = parseUrl(options.url);
    this.url = options.url;
    this.socketPath = socketPath;
    this.base = base;
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.busyRetryMs = options.busyRetryMs ?? DEFAULT_BUSY_RETRY_MS;
    this.headers = { ...(options.headers ?? {}) };
    if (options.token) this.headers.authorization = `Bearer ${options.token}`;
  }

  /** Send one request; any status comes back (callers decide what refuses). */
  async send(req: HttpRequest): Promise<HttpResponse> {
    const timeoutMs = req.timeoutMs === undefined ? this.timeoutMs : req.timeoutMs;
    const timer = timeoutMs === null ? undefined : AbortSignal.timeout(timeoutMs);
    const signals = [req.signal, timer].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const headers: Record<string, string> = { ...this.headers };
    if (req.body !== undefined) headers["content-type"] = "application/json";
    if (req.accept) headers.accept = req.accept;
    try {
      return this.socketPath !== undefined
        ? await this.sendUnix(req, headers, signal)
        : await this.sendFetch(req, headers, signal);
    } catch (e) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (timer?.aborted)
        throw new B4boxError({ status: 0, code: "timeout", message: `${req.method} ${req.path}: no answer within ${timeoutMs} ms`, cause: e });
      if (e instanceof B4boxError) throw e;
      throw transportError(`${req.method} ${this.url}${req.path}: ${(e as Error)?.message ?? e}`, e);
    }
  }

  private async sendFetch(req: HttpRequest, headers: Record<string, string>, signal?: AbortSignal): Promise<HttpResponse> {
    const res = await fetch(this.base + req.path, { method: req.method, headers, body: req.body, signal });
    const stream = res.body;
    const body: AsyncIterable<Uint8Array> = stream
      ? (stream as unknown as AsyncIterable<Uint8Array>)
      : (async function* () {})();
    return makeResponse(res.status, (n) => res.headers.get(n), body, () => {
      void stream?.cancel().catch(() => {});
    });
  }

  private sendUnix(req: HttpRequest, headers: Record<string, string>, signal?: AbortSignal): Promise<HttpResponse> {
    return new Promise((resolve, reject) => {
      const data = req.body === undefined ? undefined : Buffer.from(req.body, "utf8");
      if (data) headers["content-length"] = String(data.length);
      headers.host = "localhost";
      const r = http.request({ socketPath: this.socketPath, path: req.path, method: req.method, headers, signal }, (res) => {
        const body = (async function* () {
          for await (const chunk of res) yield new Uint8Array(chunk as Buffer);
        })();
        resolve(
          makeResponse(
            res.statusCode ?? 0,
            (n) => {
              const v = res.headers[n.toLowerCase()];
              return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
            },
            body,
            () => res.destroy(),
          ),
        );
      });
      r.on("error", reject);
      r.end(data);
    });
  }

  /**
   * A JSON request: the parsed answer of a 2xx, else the refusal as a `B4boxError`.
   * `409 run_in_flight` is retried for `busyRetryMs` unless `retryBusy` is false.
   */
  async json<T>(method: string, path: string, body?: unknown, opts: JsonOptions = {}): Promise<T> {
    const text = body === undefined ? undefined : body instanceof RawJson ? body.text : JSON.stringify(body);
    const res = await this.sendRetrying({ method, path, body: text, signal: opts.signal, timeoutMs: opts.timeoutMs }, opts.retryBusy ?? true);
    return this.answer<T>(res, method, path);
  }

  /** The parsed answer of a 2xx, else the refusal it carries as a `B4boxError`. */
  async answer<T>(res: HttpResponse, method: string, path: string): Promise<T> {
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      const name = (e as Error)?.name;
      if (name === "AbortError") throw e; // the caller's signal: its own reason
      if (name === "TimeoutError")
        throw new B4boxError({ status: 0, code: "timeout", message: `${method} ${path}: the answer did not arrive in time`, cause: e });
      throw transportError(`${method} ${this.url}${path}: the answer was cut: ${(e as Error)?.message ?? e}`, e);
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      if (res.status >= 200 && res.status < 300)
        throw new B4boxError({ status: res.status, code: "malformed_response", message: `${method} ${path}: the answer is not JSON` });
      parsed = text;
    }
    if (res.status < 200 || res.status >= 300) throw refusalError(res.status, parsed, res.header("retry-after"));
    return parsed as T;
  }

  /** `send`, retrying `409 run_in_flight` (and only that) while `busyRetryMs` lasts. */
  async sendRetrying(req: HttpRequest, retryBusy = true): Promise<HttpResponse> {
    const deadline = Date.now() + (retryBusy ? this.busyRetryMs : 0);
    for (let delay = 25; ; delay = Math.min(delay * 2, 500)) {
      const res = await this.send(req);
      if (res.status !== 409 || Date.now() + delay > deadline) return res;
      const text = await res.text();
      let code: unknown;
      try {
        code = JSON.parse(text)?.error?.details?.code;
      } catch {
        code = undefined;
      }
      if (code !== "run_in_flight") return buffered(res, text);
      await sleep(delay, req.signal);
    }
  }
}

/** A body already serialised (a source bundle's canonical text): sent byte for byte. */
export class RawJson {
  constructor(readonly text: string) {}
}

export interface JsonOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number | null;
  readonly retryBusy?: boolean;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A thread id (or any path segment) as one percent-encoded segment. */
export function seg(s: string | number): string {
  return encodeURIComponent(String(s));
}
