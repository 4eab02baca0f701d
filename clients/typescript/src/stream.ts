/**
 * b4box's streamed answers (docs/http-api.md "Streaming", "Background processes"): SSE frames
 * whose `data` is JSON. `stdout`/`stderr` chunks `{offset, text}` with `id:` = the chunk's
 * first byte in its stream; `exit` the final document; `end` `{offset}` (a log read without
 * follow that reached the spool's current end); `error` `{message}`; keepalive comments.
 *
 * `StreamCursor` honours the offsets: a chunk that starts before what was already delivered
 * (a replay after a reconnect) is trimmed to its new bytes, so a caller sees every byte once.
 */

import { B4boxError, protocolError } from "./errors.js";
import { sseItems } from "./sse.js";

export type StreamName = "stdout" | "stderr";

export interface OutputChunk {
  readonly stream: StreamName;
  /** The chunk's first byte in its stream (the SSE `id:`). */
  readonly offset: number;
  readonly text: string;
}

export type StreamEvent =
  | { readonly type: "chunk"; readonly chunk: OutputChunk }
  | { readonly type: "exit"; readonly data: unknown }
  | { readonly type: "end"; readonly offset: number }
  | { readonly type: "keepalive" };

const utf8Length = (s: string): number => Buffer.byteLength(s, "utf8");

/** Where each stream has been delivered up to, in bytes. */
export class StreamCursor {
  readonly next: Record<StreamName, number> = { stdout: 0, stderr: 0 };

  constructor(from = 0) {
    this.next.stdout = from;
  }

  /** The part of a chunk not delivered yet, or undefined when it was all seen. */
  take(c: OutputChunk): OutputChunk | undefined {
    const at = this.next[c.stream];
    const len = utf8Length(c.text);
    if (c.offset + len <= at) return undefined;
    let text = c.text;
    let offset = c.offset;
    if (c.offset < at) {
      // Drop the replayed prefix, byte-exact (offsets count the stream's raw bytes).
      const bytes = Buffer.from(c.text, "utf8").subarray(at - c.offset);
      text = new TextDecoder().decode(bytes);
      offset = at;
    }
    this.next[c.stream] = offset + utf8Length(text);
    return { stream: c.stream, offset, text };
  }
}

function parseData(event: string, data: string): Record<string, unknown> {
  try {
    const v = JSON.parse(data);
    if (typeof v === "object" && v !== null) return v as Record<string, unknown>;
  } catch {
    /* below */
  }
  throw protocolError(`stream event ${event}: data is not a JSON object`);
}

/** The typed events of one streamed answer. */
export async function* streamEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<StreamEvent> {
  for await (const item of sseItems(body)) {
    if (item.kind === "comment") {
      yield { type: "keepalive" };
      continue;
    }
    const { event, data, id } = item.value;
    if (event === "stdout" || event === "stderr") {
      const d = parseData(event, data);
      const offset = typeof d.offset === "number" ? d.offset : Number(id);
      if (typeof d.text !== "string" || !Number.isSafeInteger(offset)) throw protocolError(`stream event ${event}: no offset or text`);
      yield { type: "chunk", chunk: { stream: event, offset, text: d.text } };
    } else if (event === "exit") {
      yield { type: "exit", data: parseData(event, data) };
    } else if (event === "end") {
      const d = parseData(event, data);
      yield { type: "end", offset: typeof d.offset === "number" ? d.offset : 0 };
    } else if (event === "error") {
      const d = parseData(event, data);
      throw new B4boxError({ status: 200, code: "stream_error", message: String(d.message ?? "the run failed") });
    }
    // Unknown events are for later versions of the server: skipped.
  }
}
