// Source bundles and the software-factory flow (seed 001): createSourceBundle(dir) gives the
// same digest and the same bytes as the real `b4box bundle create` (and refuses what it
// refuses), then stage -> create -> work -> read back against a real server.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  B4box,
  B4boxError,
  SourceBundleError,
  createSourceBundle,
  formatSourceBundle,
  sourceBundleFromFiles,
  verifySourceBundle,
} from "../dist/index.js";
import { B4BOX, IS_ROOT, TOKEN, startFactoryServer, tempDir } from "./server.mjs";

const work = tempDir("bundle");
after(() => rmSync(work, { recursive: true, force: true }));

/** `b4box bundle create DIR [args] -o OUT --json`: {digest, text} or {error}. */
function cli(dir, args = []) {
  const out = path.join(work, `cli-${Math.random().toString(16).slice(2)}.json`);
  const r = spawnSync(B4BOX, ["bundle", "create", dir, ...args, "-o", out, "--json"], { encoding: "utf8" });
  if (r.status !== 0) return { error: r.stderr.trim() };
  return { digest: JSON.parse(r.stdout).digest, text: readFileSync(out, "utf8") };
}

function tree(name, files) {
  const dir = path.join(work, name);
  for (const [rel, v] of Object.entries(files)) {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    if (v === null) mkdirSync(p, { recursive: true });
    else {
      writeFileSync(p, typeof v === "object" && !(v instanceof Uint8Array) ? v.data : v);
      if (v.mode) chmodSync(p, v.mode);
    }
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe("digest", () => {
  test("the reference's vectors", () => {
    assert.equal(sourceBundleFromFiles([]).digest, "3d9d0af9e730ee18680a9e2bf15ccdf8f17a192782f6829efa157e95d9da7b06");
    const one = sourceBundleFromFiles([{ path: "main.txt", bytes: new TextEncoder().encode("x"), executable: false }]);
    assert.equal(one.digest, "379f2f39f1fd899ffb6f46be37fabac5de1b0e25a53fbad2262ca5e3de9b7997");
    assert.deepEqual(one.files, [{ path: "main.txt", base64: "eA==", executable: false }]);
  });

  test("parity with b4box bundle create: digest and bytes, a mixed tree", async () => {
    const bin = new Uint8Array(256).map((_, i) => i);
    const dir = tree("mixed", {
      "README.md": "# hi\n",
      "src/main.c": "int main(void) { return 0; }\n",
      "src/lib/util.h": "#pragma once\n",
      "bin/run.sh": { data: "#!/bin/sh\necho run\n", mode: 0o755 },
      "data/blob.bin": bin,
      "data/empty": "",
      "with space/a file.txt": "café\n",
      "Upper/Z.txt": "z",
      "a.b-c_d": "dots",
      "emptydir": null,
    });
    const ts = await createSourceBundle(dir);
    const c = cli(dir);
    assert.ok(c.digest, c.error);
    assert.equal(ts.digest, c.digest);
    assert.equal(formatSourceBundle(ts), c.text);
    assert.deepEqual(ts.files.find((f) => f.path === "bin/run.sh").executable, true);
    assert.deepEqual(ts.files.map((f) => f.path), [...ts.files.map((f) => f.path)].sort());
    assert.equal(verifySourceBundle(c.text).digest, c.digest);
    const mine = path.join(work, "mine.json");
    writeFileSync(mine, formatSourceBundle(ts));
    assert.equal(execFileSync(B4BOX, ["bundle", "verify", mine], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim(), ts.digest);
  });

  test("parity with --include-from and --exclude-dir, and .b4box must be excluded", async () => {
    const dir = tree("incl", { "a.txt": "a", "b/c.txt": "c", "node_modules/x.js": "x", ".b4box/state": "s" });
    const list = path.join(work, "include.txt");
    writeFileSync(list, "a.txt\nb/c.txt\n");
    const args = ["--include-from", list, "--exclude-dir", "node_modules", "--exclude-dir", ".b4box"];
    const c = cli(dir, args);
    const ts = await createSourceBundle(dir, { include: ["a.txt", "b/c.txt"], excludeDirectories: ["node_modules", ".b4box"] });
    assert.equal(ts.digest, c.digest);
    assert.equal(formatSourceBundle(ts), c.text);
    const refusedBoth = async (tsCall, cliArgs, pattern) => {
      await assert.rejects(tsCall, (e) => e instanceof SourceBundleError && pattern.test(e.message));
      const r = cli(dir, cliArgs);
      assert.ok(r.error && pattern.test(r.error), `the CLI: ${JSON.stringify(r)}`);
    };
    await refusedBoth(createSourceBundle(dir, { excludeDirectories: ["node_modules"] }), ["--exclude-dir", "node_modules"], /must exclude "\.b4box"/);
    await refusedBoth(
      createSourceBundle(dir, { include: ["a.txt"], excludeDirectories: ["node_modules", ".b4box"] }),
      ["--include-from", (writeFileSync(list, "a.txt\n"), list), "--exclude-dir", "node_modules", "--exclude-dir", ".b4box"],
      /Source exact inventory mismatch: 'b\/c\.txt' is not listed in include/,
    );
  });

  test("refusals as the CLI's: a symlink, a non-portable name, names differing only in case", async () => {
    const link = tree("link", { "a.txt": "a" });
    symlinkSync("a.txt", path.join(link, "l"));
    const weird = tree("weird", { "a:b": "x" });
    const cases = tree("case", { "A.txt": "1", "a.txt": "2" });
    for (const [dir, pattern] of [
      [link, /Source may not contain symlinks: 'l'/],
      [weird, /Source path "a:b" is not portable: only A-Z a-z 0-9/],
      [cases, /Source paths "A.txt" and "a.txt" differ only in case/],
    ]) {
      await assert.rejects(createSourceBundle(dir), (e) => e instanceof SourceBundleError && pattern.test(e.message), String(pattern));
      const r = cli(dir);
      assert.ok(r.error && pattern.test(r.error), `the CLI: ${JSON.stringify(r)}`);
    }
  });

  test("verifySourceBundle refuses what the server would", () => {
    const good = sourceBundleFromFiles([{ path: "a", bytes: new Uint8Array([1]), executable: false }]);
    assert.throws(() => verifySourceBundle({ ...good, digest: "0".repeat(64) }), /Source bundle digest mismatch/);
    assert.throws(() => verifySourceBundle({ ...good, extra: 1 }), /exactly version, digest and files/);
    assert.throws(() => verifySourceBundle({ ...good, files: [{ ...good.files[0], base64: "AQ" }] }), /not canonical standard base64/);
  });
});

for (const provider of ["fake", "native"]) {
  describe(`the software factory flow on ${provider} (stage, create, work, read back)`, { skip: provider === "native" && !IS_ROOT && "needs root" }, () => {
    let srv;
    before(async () => {
      srv = await startFactoryServer({ provider, scope: `ts-factory-flow-${provider}`, name: `flow-${provider}` });
    });
    after(() => srv.stop());

    test("upload, create naming the digest, the files are there, read back with the expected digest", async () => {
      const box = new B4box({ url: srv.url, token: TOKEN });
      const dir = tree("task", { "TASK.md": "fix the bug\n", "src/index.ts": "export const x = 1\n", "bin/t.sh": { data: "#!/bin/sh\n", mode: 0o755 } });
      const bundle = await createSourceBundle(dir);
      assert.equal(bundle.digest, cli(dir).digest);
      assert.deepEqual(await box.uploadSourceBundle(bundle), { digest: bundle.digest, status: "created" });
      assert.equal((await box.uploadSourceBundle(bundle)).status, "held");

      const t = await box.threads.create({ id: "wo-1", metadata: { task: "bug" }, workspace: { sourceDigest: bundle.digest, environmentLinks: [] } });
      assert.deepEqual(t.info.workspace, { sourceDigest: bundle.digest });
      assert.equal(await t.files.read("TASK.md"), "fix the bug\n");
      assert.equal((await t.files.lstat("bin/t.sh")).executable, true);
      if (provider === "native") assert.equal((await t.commands.run("./bin/t.sh; cat TASK.md")).stdout, "fix the bug\n");
      await t.files.write("draft/fix.md", "done\n");
      await t.files.edit("src/index.ts", { oldText: "1", newText: "2" });

      const read = await t.inspect({ root: "draft" }, { expectedSourceDigest: bundle.digest });
      assert.equal(read.sourceDigest, bundle.digest);
      assert.deepEqual(read.inspection.files, { "fix.md": "done\n" });
      const all = await t.inspect({ unsupported: "skip" });
      assert.equal(all.inspection.files["src/index.ts"], "export const x = 2\n");
      assert.deepEqual(all.inspection.skipped, [{ path: "bin/t.sh", reason: "executable" }]);
      await assert.rejects(t.inspect({ root: "draft" }, { expectedSourceDigest: "f".repeat(64) }), (e) => e instanceof B4boxError && e.code === "source_mismatch");
      await assert.rejects(t.inspect({}), (e) => e instanceof B4boxError && e.code === "workspace_inspection_refused" && e.status === 422);
      await t.delete();
    });

    test("refusals: a digest never uploaded, an upload whose bytes do not match its digest", async () => {
      const box = new B4box({ url: srv.url, token: TOKEN });
      await assert.rejects(box.threads.create({ id: "wo-2", workspace: { sourceDigest: "7".repeat(64) } }), (e) =>
        e instanceof B4boxError && e.status === 422 && e.code === "workspace_source_not_held");
      const b = sourceBundleFromFiles([{ path: "x", bytes: new Uint8Array([120]), executable: false }]);
      await assert.rejects(box.uploadSourceBundle({ ...b, digest: "0".repeat(64) }), (e) => e instanceof B4boxError && e.status >= 400 && e.status < 500);
    });
  });
}
