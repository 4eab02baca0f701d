/**
 * Typed errors. Every refusal b4box sends has a named code (`error.details.code`, see
 * docs/http-api.md "Refusals"); a tool that failed answers `{ok: false, error: {code}}`.
 * Both become a `B4boxError` with that code, so callers branch on `code`, never on text.
 * A command that exits non-zero is a result (`CommandResult.exitCode`), not an error.
 */

export interface B4boxErrorInit {
  /** The HTTP status; 0 when no answer came (connection refused, reset, malformed). */
  readonly status: number;
  /** The server's named code (`thread_not_found`, `run_in_flight`, `tool_error`, ...). */
  readonly code: string;
  readonly message: string;
  /** The `B4_Exxxx` registry code when one applies (`B4_E2001`, `B4_E3001`). */
  readonly registryCode?: string;
  /** `errno` of a tool failure (`ENOENT`, `EISDIR`, ...). */
  readonly errno?: string;
  /** The refusal's `error.details` (or the failed tool result), as sent. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** Seconds, from `Retry-After`, on 409 run_in_flight and 429s. */
  readonly retryAfter?: number;
  readonly cause?: unknown;
}

export class B4boxError extends Error {
  override readonly name = "B4boxError";
  readonly status: number;
  readonly code: string;
  readonly registryCode: string | undefined;
  readonly errno: string | undefined;
  readonly details: Readonly<Record<string, unknown>>;
  readonly retryAfter: number | undefined;

  constructor(init: B4boxErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.registryCode = init.registryCode;
    this.errno = init.errno;
    this.details = init.details ?? {};
    this.retryAfter = init.retryAfter;
  }
}

/** A bounded read found more than `maxBytes` (B4.run's name and message). */
export class WorkspaceReadLimitError extends Error {
  override readonly name = "WorkspaceReadLimitError";
  readonly path: string;
  readonly maxBytes: number;

  constructor(op: string, path: string, maxBytes: number) {
    super(`${op} ${path}: content exceeds maxBytes (${maxBytes}).`);
    this.path = path;
    this.maxBytes = maxBytes;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The error for a non-2xx answer, from its parsed body (or its text when it is not JSON). */
export function refusalError(status: number, body: unknown, retryAfter?: string | null): B4boxError {
  const err = isObject(body) && isObject(body.error) ? body.error : undefined;
  const details = err && isObject(err.details) ? err.details : {};
  const code = typeof details.code === "string" ? details.code : status === 404 ? "not_found" : `http_${status}`;
  const message =
    typeof err?.message === "string" ? err.message : typeof body === "string" && body ? body : `HTTP ${status}`;
  const seconds = retryAfter ? Number(retryAfter) : NaN;
  return new B4boxError({
    status,
    code,
    message,
    registryCode: typeof err?.code === "string" ? err.code : undefined,
    details,
    retryAfter: Number.isFinite(seconds) ? seconds : undefined,
  });
}

/** The error for a failed tool result `{ok: false, error: {code, message, errno?}}`. */
export function toolError(result: unknown, status = 200): B4boxError {
  const err = isObject(result) && isObject(result.error) ? result.error : {};
  const code = typeof err.code === "string" ? err.code : "tool_error";
  return new B4boxError({
    status,
    code,
    message: typeof err.message === "string" ? err.message : "the tool failed",
    registryCode: /^B4_E\d{4}$/.test(code) ? code : undefined,
    errno: typeof err.errno === "string" ? err.errno : undefined,
    details: isObject(result) ? result : {},
  });
}

/** No usable answer: the server is unreachable, went away or sent something malformed. */
export function transportError(message: string, cause?: unknown): B4boxError {
  return new B4boxError({ status: 0, code: "connection_failed", message, cause });
}

export function protocolError(message: string): B4boxError {
  return new B4boxError({ status: 0, code: "malformed_response", message });
}
