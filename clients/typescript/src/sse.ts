/**
 * A Server-Sent Events parser (the WHATWG "event stream" interpretation), fed with bytes as
 * they arrive. b4box sends `event: <name>\nid: <N>\ndata: <json>\n\n` frames and `: keepalive`
 * comments (docs/http-api.md "Streaming"); this parser takes any valid stream: CRLF, CR or
 * LF line ends, multi-line `data`, a leading BOM, fields without a space after the colon,
 * comments (reported as `comment` so a caller can see keepalives).
 */

export interface SseEvent {
  /** `message` when the frame named none. */
  readonly event: string;
  readonly data: string;
  /** The last `id:` seen, as the spec's "last event ID" (carried over frames). */
  readonly id: string | undefined;
}

export type SseItem = { readonly kind: "event"; readonly value: SseEvent } | { readonly kind: "comment"; readonly text: string };

export class SseParser {
  private readonly decoder = new TextDecoder("utf-8");
  private buf = "";
  private first = true;
  private pendingCR = false;
  private event = "";
  private data: string[] = [];
  private hasData = false;
  private lastId: string | undefined;

  /** Feed bytes; returns the items completed by them, in order. */
  push(chunk: Uint8Array): SseItem[] {
    return this.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /** The end of the stream: an unterminated frame is dropped, as the spec says. */
  end(): SseItem[] {
    const out = this.feed(this.decoder.decode());
    this.buf = "";
    return out;
  }

  private feed(text: string): SseItem[] {
    if (this.first && text.length) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      this.first = false;
    }
    const out: SseItem[] = [];
    let s = this.buf + text;
    // A CR ending the last chunk may be the first half of a CRLF.
    if (this.pendingCR && s.startsWith("\n")) s = s.slice(1);
    this.pendingCR = false;
    let start = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(s.slice(start, i), out);
      if (c === 13) {
        if (i + 1 < s.length) {
          if (s.charCodeAt(i + 1) === 10) i++;
        } else this.pendingCR = true;
      }
      start = i + 1;
    }
    this.buf = s.slice(start);
    return out;
  }

  private line(line: string, out: SseItem[]): void {
    if (line === "") {
      if (this.hasData) {
        out.push({ kind: "event", value: { event: this.event || "message", data: this.data.join("\n"), id: this.lastId } });
      }
      this.event = "";
      this.data = [];
      this.hasData = false;
      return;
    }
    if (line.startsWith(":")) {
      out.push({ kind: "comment", text: line.slice(1).replace(/^ /, "") });
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") {
      this.data.push(value);
      this.hasData = true;
    } else if (field === "id") {
      if (!value.includes("\0")) this.lastId = value;
    }
    // `retry` and unknown fields: nothing for this client to do.
  }
}

/** Parse a response body into SSE items as they complete. */
export async function* sseItems(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseItem> {
  const p = new SseParser();
  for await (const chunk of body) yield* p.push(chunk);
  yield* p.end();
}
