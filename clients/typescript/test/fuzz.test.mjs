// Randomised tests of the parsers that read what a server sends (seeded, so a failure
// reproduces): the SSE parser must never throw, and must give the same items however the
// bytes are cut; the stream cursor must deliver every byte once whatever replays it sees;
// verifySourceBundle must refuse mutated bundles with a SourceBundleError, never crash.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SseParser, SourceBundleError, formatSourceBundle, sourceBundleFromFiles, verifySourceBundle } from "../dist/index.js";
import { StreamCursor } from "../dist/stream.js";

function prng(seed) {
  let x = seed >>> 0 || 1;
  return () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0) / 2 ** 32);
}
const SEED = Number(process.env.FUZZ_SEED ?? 17);
const pieces = ["event: ", "data: ", "id: ", "retry: 5", ":", " ", "x", "é", "{}", "\n", "\r", "\r\n", "\n\n", "\uFEFF", "stdout", "\u0000"];

const parseAll = (chunks) => {
  const p = new SseParser();
  const out = [];
  for (const c of chunks) out.push(...p.push(c));
  out.push(...p.end());
  return out;
};

test(`SSE: random streams, random cuts, same items (seed ${SEED})`, () => {
  const rnd = prng(SEED);
  for (let i = 0; i < 1500; i++) {
    let text = "";
    for (let n = Math.floor(rnd() * 40); n > 0; n--) text += pieces[Math.floor(rnd() * pieces.length)];
    const bytes = new TextEncoder().encode(text);
    const whole = parseAll([bytes]);
    const chunks = [];
    for (let at = 0; at < bytes.length; ) {
      const n = 1 + Math.floor(rnd() * 7);
      chunks.push(bytes.slice(at, at + n));
      at += n;
    }
    assert.deepEqual(parseAll(chunks), whole, JSON.stringify(text));
  }
});

test(`SSE: arbitrary bytes never throw (seed ${SEED})`, () => {
  const rnd = prng(SEED + 1);
  for (let i = 0; i < 1500; i++) {
    const b = new Uint8Array(Math.floor(rnd() * 64)).map(() => Math.floor(rnd() * 256));
    parseAll([b.slice(0, b.length >> 1), b.slice(b.length >> 1)]);
  }
});

test(`stream cursor: replays and overlaps deliver every byte once (seed ${SEED})`, () => {
  const rnd = prng(SEED + 2);
  for (let i = 0; i < 300; i++) {
    const full = Array.from({ length: 1 + Math.floor(rnd() * 60) }, () => (rnd() < 0.2 ? "é" : "ab\n"[Math.floor(rnd() * 3)])).join("");
    const bytes = Buffer.from(full);
    const cursor = new StreamCursor();
    let got = "";
    // Chunks cut on character boundaries, some re-sent from an earlier offset (a reconnect).
    const bounds = [0];
    for (let at = 0; at < full.length; ) {
      at += 1 + Math.floor(rnd() * 5);
      bounds.push(Buffer.byteLength(full.slice(0, Math.min(at, full.length))));
    }
    for (let k = 1; k < bounds.length; k++) {
      let from = bounds[k - 1];
      if (rnd() < 0.3 && k > 1) from = bounds[Math.floor(rnd() * k)];
      const text = bytes.subarray(from, bounds[k]).toString();
      const c = cursor.take({ stream: "stdout", offset: from, text });
      if (c) got += c.text;
    }
    assert.equal(got, full);
  }
});

test(`verifySourceBundle: mutated bundles are refused, never crash (seed ${SEED})`, () => {
  const rnd = prng(SEED + 3);
  const good = formatSourceBundle(sourceBundleFromFiles([
    { path: "a/b.txt", bytes: new TextEncoder().encode("hello"), executable: false },
    { path: "run.sh", bytes: new Uint8Array([35, 33]), executable: true },
  ]));
  assert.equal(verifySourceBundle(good).files.length, 2);
  let refused = 0;
  for (let i = 0; i < 2000; i++) {
    const s = good.split("");
    for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--) s[Math.floor(rnd() * s.length)] = String.fromCharCode(32 + Math.floor(rnd() * 95));
    const text = s.join("");
    try {
      verifySourceBundle(text);
    } catch (e) {
      assert.ok(e instanceof SourceBundleError, `${e} for ${text}`);
      refused++;
      continue;
    }
    // Accepted: only when the mutation left an equivalent document (e.g. inside no value).
    assert.equal(verifySourceBundle(text).digest, JSON.parse(good).digest);
  }
  assert.ok(refused > 1500, `only ${refused} refused`);
});
