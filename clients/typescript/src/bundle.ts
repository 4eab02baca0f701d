/**
 * Source bundles (B4.run's SourceBundle; b4box's `include/b4box/bundle.h`,
 * docs/workspaces.md "Source bundles"): the files a staged thread starts from, named by a
 * digest the server checks byte for byte.
 *
 * `{"version":1,"digest":"<64 hex>","files":[{"path","base64","executable"}...]}`, files
 * sorted by path (bytewise: paths are portable ASCII), canonical JSON = that key order and no
 * whitespace. The digest is the SHA-256 of the compact JSON
 * `["b4-workspace-source-v1",[[path,base64,executable],...]]`.
 *
 * `createSourceBundle(dir)` captures a directory as `b4box bundle create DIR` does
 * (src/cli/cmd-bundle.c over src/lib/workspace/capture.c): regular files only, symlinks and
 * special files refused, `excludeDirectories` pruned (each an existing directory holding no
 * include), `.b4box` must be excluded when present, `include` the exact inventory, the
 * executable bit from any of 0o111, every file re-checked for change after it is read. Its
 * output is byte for byte the CLI's (test/bundle.test.mjs checks it against the real CLI).
 */

import { createHash } from "node:crypto";
import { lstat, open, readdir } from "node:fs/promises";
import path from "node:path";

export const MAX_ENTRIES = 10_000;
export const MAX_FILE_BYTES = 16 * 1024 * 1024;
export const MAX_TOTAL_BYTES = 64 * 1024 * 1024;
export const MAX_PATH = 1024;
export const MAX_SEGMENT = 255;

export interface SourceBundleFile {
  readonly path: string;
  readonly base64: string;
  readonly executable: boolean;
}

export interface SourceBundle {
  readonly version: 1;
  readonly digest: string;
  readonly files: readonly SourceBundleFile[];
}

export interface SourceInput {
  readonly path: string;
  readonly bytes: Uint8Array;
  readonly executable: boolean;
}

/** A refused bundle or capture; `message` is the CLI's text. */
export class SourceBundleError extends Error {
  override readonly name = "SourceBundleError";
}

function fail(msg: string): never {
  throw new SourceBundleError(msg);
}

const PORTABLE = /^[A-Za-z0-9._ /-]*$/;

function isDeviceName(seg: string): boolean {
  const dot = seg.indexOf(".");
  const stem = (dot < 0 ? seg : seg.slice(0, dot)).toUpperCase();
  return ["CON", "PRN", "AUX", "NUL"].includes(stem) || /^(COM|LPT)[1-9]$/.test(stem);
}

function segmentProblem(s: string): string | undefined {
  if (s.length === 0) return "it has an empty segment";
  if (s.length > MAX_SEGMENT) return "a segment is longer than 255 characters";
  if (s === "." || s === "..") return 'it has a "." or ".." segment';
  if (s.startsWith(" ")) return "a segment starts with a space";
  if (s.endsWith(" ") || s.endsWith(".")) return "a segment ends with a space or a dot";
  if (s.includes("  ")) return "a segment has a double space";
  if (isDeviceName(s)) return "a segment is a Windows device name";
  return undefined;
}

/** Why `p` is not a portable path, or undefined when it is one. */
export function portablePathProblem(p: string): string | undefined {
  if (p.length < 1 || p.length > MAX_PATH) return "it must be 1 to 1024 characters";
  if (!PORTABLE.test(p)) return "only A-Z a-z 0-9 . _ - space and / are allowed";
  for (const s of p.split("/")) {
    const why = segmentProblem(s);
    if (why) return why;
  }
  return undefined;
}

function checkPortable(what: string, p: string): void {
  const why = portablePathProblem(p);
  if (why) fail(`${what} ${JSON.stringify(p.length > 300 ? p.slice(0, 300) : p)} is not portable: ${why}`);
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** No repeats, no case-only differences, one casing per directory, no file above a path. */
export function checkPaths(paths: readonly string[]): void {
  type Key = { lower: string; orig: string; len: number; leaf: boolean };
  const keys: Key[] = [];
  for (const p of paths) {
    keys.push({ lower: p.toLowerCase(), orig: p, len: p.length, leaf: true });
    for (let i = 0; i < p.length; i++)
      if (p[i] === "/") keys.push({ lower: p.slice(0, i).toLowerCase(), orig: p, len: i, leaf: false });
  }
  keys.sort((x, y) => cmp(x.lower, y.lower) || Number(y.leaf) - Number(x.leaf) || cmp(x.orig, y.orig));
  for (let i = 1; i < keys.length; i++) {
    const a = keys[i - 1]!;
    const b = keys[i]!;
    if (a.lower !== b.lower) continue;
    if (a.leaf && b.leaf && a.orig === b.orig) fail(`Source path "${a.orig}" is repeated`);
    if (a.leaf && b.leaf) fail(`Source paths "${a.orig}" and "${b.orig}" differ only in case`);
    if (a.leaf) fail(`Source path "${a.orig}" is a file and an ancestor of "${b.orig}"`);
    if (a.orig.slice(0, a.len) !== b.orig.slice(0, a.len))
      fail(`Source paths "${a.orig}" and "${b.orig}" spell the directory "${a.orig.slice(0, a.len)}" with different casing`);
  }
}

/** The §7.1 digest of files already sorted by path. */
export function sourceDigest(files: readonly SourceBundleFile[]): string {
  const h = createHash("sha256");
  h.update('["b4-workspace-source-v1",[');
  files.forEach((f, i) => h.update(`${i ? "," : ""}${JSON.stringify([f.path, f.base64, f.executable])}`));
  h.update("]]");
  return h.digest("hex");
}

/** B4.run's `createSourceBundle(files)`: validate, sort, encode, digest. */
export function sourceBundleFromFiles(inputs: readonly SourceInput[]): SourceBundle {
  if (inputs.length > MAX_ENTRIES) fail(`Source bundle has more than ${MAX_ENTRIES} entries`);
  let total = 0;
  for (const f of inputs) {
    checkPortable("Source path", f.path);
    if (f.bytes.length > MAX_FILE_BYTES) fail(`Source bundle file "${f.path}" exceeds ${MAX_FILE_BYTES} bytes`);
    total += f.bytes.length;
    if (total > MAX_TOTAL_BYTES) fail(`Source bundle exceeds ${MAX_TOTAL_BYTES} bytes in total`);
  }
  checkPaths(inputs.map((f) => f.path));
  const files = [...inputs]
    .sort((a, b) => cmp(a.path, b.path))
    .map((f) => ({ path: f.path, base64: Buffer.from(f.bytes).toString("base64"), executable: f.executable === true }));
  return { version: 1, digest: sourceDigest(files), files };
}

/** The canonical JSON text (what `b4box bundle create` writes and the server stores). */
export function formatSourceBundle(b: SourceBundle): string {
  const files = b.files.map(
    (f) => `{"path":${JSON.stringify(f.path)},"base64":"${f.base64}","executable":${f.executable ? "true" : "false"}}`,
  );
  return `{"version":1,"digest":"${b.digest}","files":[${files.join(",")}]}`;
}

export interface CaptureOptions {
  /** The exact list of every regular file (relative, portable); absent: take every file. */
  readonly include?: readonly string[];
  /** Directories (relative, portable, existing) left out with everything below them. */
  readonly excludeDirectories?: readonly string[];
}

interface Found {
  readonly rel: string;
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
  readonly mode: number;
}

async function scan(root: string, rel: string, exclude: ReadonlySet<string>, out: Found[], seen: { n: number }): Promise<void> {
  const names = await readdir(path.join(root, rel));
  for (const name of names) {
    const r = rel ? `${rel}/${name}` : name;
    if (++seen.n > MAX_ENTRIES) fail(`Source has more than ${MAX_ENTRIES} entries`);
    const st = await lstat(path.join(root, r)).catch(() => fail(`Source changed during capture: cannot stat '${r}'`));
    if (st.isSymbolicLink()) fail(`Source may not contain symlinks: '${r}'`);
    if (st.isDirectory()) {
      if (!exclude.has(r)) await scan(root, r, exclude, out, seen);
      continue;
    }
    if (!st.isFile()) fail(`Source may contain only regular files: '${r}'`);
    out.push({ rel: r, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, mode: st.mode });
  }
}

const same = (a: Found, b: Found): boolean =>
  a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.mode === b.mode;

async function statFound(root: string, rel: string): Promise<Found> {
  const st = await lstat(path.join(root, rel));
  return { rel, dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, mode: st.mode };
}

async function readFound(root: string, f: Found): Promise<Uint8Array> {
  const fh = await open(path.join(root, f.rel), "r").catch(() => fail(`Source changed during capture: cannot open '${f.rel}'`));
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.ino !== f.ino || st.dev !== f.dev || st.size !== f.size || st.mtimeMs !== f.mtimeMs)
      fail(`Source changed during capture: '${f.rel}'`);
    if (f.size > MAX_FILE_BYTES) fail(`Source bundle file "${f.rel}" exceeds ${MAX_FILE_BYTES} bytes`);
    const buf = Buffer.alloc(f.size + 1);
    let n = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
      if (n > f.size) fail(`Source changed during capture: '${f.rel}'`);
    }
    if (n !== f.size) fail(`Source changed during capture: '${f.rel}'`);
    return new Uint8Array(buf.buffer, buf.byteOffset, n);
  } finally {
    await fh.close();
  }
}

/** Capture `dir` into a bundle, as `b4box bundle create DIR [--include-from] [--exclude-dir]`. */
export async function createSourceBundle(dir: string, options: CaptureOptions = {}): Promise<SourceBundle> {
  const root = path.resolve(dir);
  const top = await lstat(root).catch(() => fail(`Source directory '${dir}' is not a directory of the app`));
  if (!top.isDirectory()) fail(`Source directory '${dir}' is not a directory of the app`);
  const excludes = options.excludeDirectories ?? [];
  for (const x of excludes) {
    checkPortable("Source excluded directory", x);
    const st = await lstat(path.join(root, x)).catch(() => undefined);
    if (!st?.isDirectory()) fail(`Source excluded directory '${x}' is not a directory of the source`);
    for (const i of options.include ?? [])
      if (i === x || i.startsWith(`${x}/`)) fail(`Source include '${i}' lies in excluded directory '${x}'`);
  }
  if ((await lstat(path.join(root, ".b4box")).catch(() => undefined)) && !excludes.includes(".b4box"))
    fail('Source captured from "." must exclude ".b4box"');

  const found: Found[] = [];
  await scan(root, "", new Set(excludes), found, { n: 0 });
  found.sort((a, b) => cmp(a.rel, b.rel));
  if (options.include) checkInventory(found, options.include);

  const inputs: SourceInput[] = [];
  for (const f of found) inputs.push({ path: f.rel, bytes: await readFound(root, f), executable: (f.mode & 0o111) !== 0 });
  for (const f of found)
    if (!same(f, await statFound(root, f.rel).catch(() => fail(`Source changed during capture: '${f.rel}'`))))
      fail(`Source changed during capture: '${f.rel}'`);
  return sourceBundleFromFiles(inputs);
}

function checkInventory(found: readonly Found[], include: readonly string[]): void {
  const want = [...include].sort(cmp);
  for (let i = 1; i < want.length; i++)
    if (want[i] === want[i - 1]) fail(`Source exact inventory mismatch: '${want[i]}' is listed twice`);
  const have = new Set(found.map((f) => f.rel));
  const listed = new Set(want);
  for (const f of found) if (!listed.has(f.rel)) fail(`Source exact inventory mismatch: '${f.rel}' is not listed in include`);
  for (const w of want)
    if (!have.has(w)) fail(`Source exact inventory mismatch: '${w}' is listed in include but is not a regular file of the source`);
}

/** Parse and check a bundle text or object (shape, base64, limits, paths, order, digest). */
export function verifySourceBundle(input: string | unknown): SourceBundle {
  let doc: any = input;
  if (typeof input === "string")
    try {
      doc = JSON.parse(input);
    } catch (e) {
      fail(`Source bundle is not JSON: ${(e as Error).message}`);
    }
  const exactly = (o: unknown, keys: string[]) =>
    typeof o === "object" && o !== null && !Array.isArray(o) && Object.keys(o).length === keys.length && keys.every((k) => k in o);
  if (!exactly(doc, ["version", "digest", "files"])) fail("Source bundle must be an object with exactly version, digest and files");
  if (doc.version !== 1) fail("Source bundle version must be 1");
  if (typeof doc.digest !== "string" || !/^[0-9a-f]{64}$/.test(doc.digest))
    fail("Source bundle digest must be 64 lowercase hex characters");
  if (!Array.isArray(doc.files)) fail("Source bundle files must be an array");
  if (doc.files.length > MAX_ENTRIES) fail(`Source bundle has more than ${MAX_ENTRIES} entries`);
  const files: SourceBundleFile[] = doc.files.map((f: any, i: number) => {
    if (!exactly(f, ["path", "base64", "executable"]))
      fail(`Source bundle file ${i} must be an object with exactly path, base64 and executable`);
    if (typeof f.path !== "string") fail(`Source bundle file ${i} path must be a string`);
    if (typeof f.executable !== "boolean") fail(`Source bundle file ${i} executable must be a boolean`);
    if (typeof f.base64 !== "string" || Buffer.from(f.base64, "base64").toString("base64") !== f.base64)
      fail(`Source bundle file ${i} base64 is not canonical standard base64`);
    return { path: f.path, base64: f.base64, executable: f.executable };
  });
  sourceBundleFromFiles(files.map((f) => ({ path: f.path, bytes: Buffer.from(f.base64, "base64"), executable: f.executable })));
  for (let i = 1; i < files.length; i++)
    if (cmp(files[i - 1]!.path, files[i]!.path) >= 0)
      fail(`Source bundle files are not sorted by path ("${files[i - 1]!.path}" before "${files[i]!.path}")`);
  if (sourceDigest(files) !== doc.digest) fail("Source bundle digest mismatch");
  return { version: 1, digest: doc.digest, files };
}
