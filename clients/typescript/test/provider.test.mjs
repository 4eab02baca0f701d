// b4boxSandbox() against a real `b4box serve`: the ported conformance suite on the fake
// provider always and on native as root, then what the suite does not reach: escaped thread
// ids, preflight, the network-policy guard, the handle's other fs members, reader edges.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { B4boxError, WorkspaceReadLimitError, b4boxSandbox, serverThreadId, withWorkspaceReader, B4box } from "../dist/index.js";
import { runProviderConformance } from "./conformance.mjs";
import { IS_ROOT, TOKEN, startFactoryServer, startServer, fakeConfig, stopAll } from "./server.mjs";

const servers = {};
before(async () => {
  servers.fake = await startFactoryServer({ provider: "fake", scope: "ts-prov" });
  servers.plain = await startServer({ config: fakeConfig("ts-plain"), name: "plain" });
  if (IS_ROOT) servers.native = await startFactoryServer({ provider: "native", scope: "ts-prov-native", name: "native" });
});
after(async () => {
  await stopAll(servers);
});

runProviderConformance({ name: "b4box (fake)", makeProvider: () => b4boxSandbox({ url: servers.fake.url, token: TOKEN }) });
if (IS_ROOT)
  runProviderConformance({ name: "b4box (native)", makeProvider: () => b4boxSandbox({ url: servers.native.url, token: TOKEN }) });
else test("SandboxProvider conformance: b4box (native)", (t) => t.skip("needs root"));

const signal = new AbortController().signal;
const policy = { network: { mode: "allow" } };
const ctxOf = (h) => ({ signal, workspaceRoot: h.workspaceRoot });

describe("b4boxSandbox beyond the suite", () => {
  test("the shape: name, required members, the optional ones present", () => {
    const p = b4boxSandbox({ url: servers.fake.url, token: TOKEN });
    assert.equal(p.name, "b4box");
    for (const m of ["acquire", "release", "destroy", "preflight", "openWorkspaceReader"]) assert.equal(typeof p[m], "function", m);
    assert.equal(b4boxSandbox({ url: servers.fake.url, name: "x", workspaceReader: false }).openWorkspaceReader, undefined);
  });

  test("logical ids with / and % map to distinct server ids; the handle keeps the logical one", async () => {
    assert.equal(serverThreadId("a/b"), "a%2Fb");
    assert.equal(serverThreadId("a%2Fb"), "a%252Fb");
    assert.equal(serverThreadId(".."), "%2E%2E");
    assert.equal(serverThreadId("é"), "é");
    assert.equal(serverThreadId("a\nb\u007f"), "a%0Ab%7F");
    assert.throws(() => serverThreadId("a\ud800"), (e) => e instanceof B4boxError && e.code === "invalid_thread_id");
    assert.throws(() => serverThreadId("x".repeat(257)), (e) => e instanceof B4boxError && e.code === "invalid_thread_id");
    const p = b4boxSandbox({ url: servers.fake.url, token: TOKEN });
    const [a, b] = ["team/1", "team%2F1"];
    try {
      const ha = await p.acquire({ threadId: a, policy, signal });
      const hb = await p.acquire({ threadId: b, policy, signal });
      assert.equal(ha.threadId, a);
      await ha.filesystem.writeFile("/workspace/who", "a", ctxOf(ha));
      assert.deepEqual(await hb.filesystem.listDir("/workspace", ctxOf(hb)), []);
      const box = new B4box({ url: servers.fake.url, token: TOKEN });
      assert.equal((await box.threads.get("team%2F1")).id, "team%2F1");
    } finally {
      await p.destroy(a);
      await p.destroy(b);
    }
  });

  test("release and destroy of a thread that is not there are done already", async () => {
    const p = b4boxSandbox({ url: servers.fake.url, token: TOKEN });
    await p.release("never-was");
    await p.destroy("never-was");
    await p.destroy("never-was");
  });

  test("a non-zero exit is a result; stdout and stderr come back; env and cwd pass", async () => {
    const p = b4boxSandbox({ url: servers.plain.url });
    const h = await p.acquire({ threadId: "exit3", policy, signal });
    try {
      assert.deepEqual(await h.exec.runCommand({ command: "exit 3" }, ctxOf(h)), { stdout: "", stderr: "", exitCode: 3 });
      assert.equal((await h.exec.runCommand({ command: "echo hi" }, ctxOf(h))).stdout, "hi\n");
      await assert.rejects(h.exec.runCommand({ command: "true", env: { "1BAD": "x" } }, ctxOf(h)), /Invalid environment variable name "1BAD"/);
    } finally {
      await p.destroy("exit3");
    }
  });

  test("the handle's fs members: lstat, statFile, walkTree, binary reads, bounds, realPath, quiet ops", async () => {
    const p = b4boxSandbox({ url: servers.plain.url });
    const h = await p.acquire({ threadId: "fsops", policy, signal });
    const c = ctxOf(h);
    const fs = h.filesystem;
    try {
      assert.equal(h.workspaceRoot, "/workspace");
      assert.deepEqual(await fs.writeFile("/workspace/d/a.txt", "héllo", c), { bytesWritten: 6 });
      assert.deepEqual(await fs.lstat("/workspace/d/a.txt", c), { kind: "file", size: 6, executable: false });
      assert.equal((await fs.lstat("/workspace/d", c)).kind, "directory");
      assert.equal((await fs.statFile("/workspace/d/a.txt", c)).size, 6);
      assert.deepEqual(Array.from(await fs.readBinaryFile("/workspace/d/a.txt", c)), Array.from(Buffer.from("héllo")));
      assert.equal(await fs.readFile("/workspace/d/a.txt", c, { maxBytes: 6 }), "héllo");
      await assert.rejects(fs.readFile("/workspace/d/a.txt", c, { maxBytes: 5 }), (e) =>
        e instanceof WorkspaceReadLimitError && e.message === "readFile /workspace/d/a.txt: content exceeds maxBytes (5).");
      const walked = await fs.walkTree("/workspace", c, { maxEntries: 10 });
      assert.deepEqual(walked.map((e) => [e.path, e.kind]), [["d", "directory"], ["d/a.txt", "file"]]);
      await assert.rejects(fs.walkTree("/workspace", c, { maxEntries: 1 }), /Workspace entries limit exceeded/);
      const [one] = await fs.readBinaryFiles([{ path: "/workspace/d/a.txt", maxBytes: 100 }], c);
      assert.equal(Buffer.from(one).toString(), "héllo");
      assert.equal(await fs.realPath("/workspace/d/../d/x/y", c), "/workspace/d/x/y");
      await fs.mkdir("/workspace/m/n", c);
      assert.equal((await fs.lstat("/workspace/m/n", c)).kind, "directory");
      await fs.touchFile("/workspace/t", c);
      await fs.removeFile("/workspace/t", c);
      await fs.removeFile("/workspace/missing", c);
      assert.ok(!(await fs.listDir("/workspace", c)).includes("t"));
      await assert.rejects(fs.readFile("/workspace/nope", c), (e) => e instanceof B4boxError && e.code === "not_found" && /^readFile failed: /.test(e.message));
    } finally {
      await p.destroy("fsops");
    }
  });

  test("preflight: ok on a live server, warnings for what is not enforced; unreachable and bad token fail", async () => {
    const ok = await b4boxSandbox({ url: servers.fake.url, token: TOKEN }).preflight();
    assert.equal(ok.ok, true, JSON.stringify(ok));
    assert.ok(Array.isArray(ok.warnings));
    const box = new B4box({ url: servers.fake.url, token: TOKEN });
    assert.ok(!(await box.threads.list()).some((t) => t.thread_id.startsWith("b4box-preflight-")), "the probe thread is deleted");
    const bad = await b4boxSandbox({ url: servers.fake.url, token: "wrong-token-0123456789" }).preflight();
    assert.equal(bad.ok, false);
    assert.match(bad.detail, /refused the token/);
    const gone = await b4boxSandbox({ url: "http://127.0.0.1:9", requestTimeoutMs: 2000 }).preflight();
    assert.equal(gone.ok, false);
    assert.match(gone.detail, /not reachable/);
    if (IS_ROOT) {
      const n = await b4boxSandbox({ url: servers.native.url, token: TOKEN }).preflight();
      assert.equal(n.ok, true, JSON.stringify(n));
    }
  });

  test("a policy that denies the network is refused on a server whose threads get it", async () => {
    const p = b4boxSandbox({ url: servers.fake.url, token: TOKEN });
    try {
      await assert.rejects(p.acquire({ threadId: "netguard", policy: { network: { mode: "deny" } }, signal }), (e) =>
        e instanceof B4boxError && e.code === "policy_mismatch");
      const off = b4boxSandbox({ url: servers.fake.url, token: TOKEN, checkNetworkPolicy: false });
      await off.acquire({ threadId: "netguard", policy: { network: { mode: "deny" } }, signal });
    } finally {
      await p.destroy("netguard");
    }
  });

  (IS_ROOT ? test : test.skip)("reader (native): executables, symlinks and empty directories are visible", async () => {
    const p = b4boxSandbox({ url: servers.native.url, token: TOKEN });
    const h = await p.acquire({ threadId: "rdn", policy, signal });
    try {
      await h.filesystem.writeFile("/workspace/run.sh", "#!/bin/sh\necho hi\n", ctxOf(h));
      const made = await h.exec.runCommand({ command: "chmod +x run.sh && ln -s run.sh link && mkdir empty && printf '\\377\\0' > bin" }, ctxOf(h));
      assert.equal(made.exitCode, 0, made.stderr);
      await p.release("rdn");
      await withWorkspaceReader(p, { threadId: "rdn", signal }, async (r) => {
        assert.deepEqual(await r.filesystem.lstat("/workspace/run.sh", ctxOf(r)), { kind: "file", size: 18, executable: true });
        assert.deepEqual(await r.filesystem.lstat("/workspace/link", ctxOf(r)), { kind: "symlink", size: 0, executable: false, target: "run.sh" });
        assert.equal(await r.filesystem.readFile("/workspace/link", ctxOf(r)), "#!/bin/sh\necho hi\n");
        assert.deepEqual(await r.filesystem.listDir("/workspace/empty", ctxOf(r)), []);
        assert.deepEqual([...(await r.filesystem.readBinaryFile("/workspace/bin", ctxOf(r)))], [0xff, 0]);
        assert.ok((await r.filesystem.statFile("/workspace/run.sh", ctxOf(r))).mtimeMs > 0);
      });
    } finally {
      await p.destroy("rdn");
    }
  });

  test("reader: closed readers refuse, a server without workspaceRead says so, an aborted open rejects", async () => {
    const p = b4boxSandbox({ url: servers.fake.url, token: TOKEN });
    const h = await p.acquire({ threadId: "rd", policy, signal });
    try {
      await h.filesystem.writeFile("/workspace/sub/x.txt", "x", ctxOf(h));
      const r = await p.openWorkspaceReader({ threadId: "rd", signal });
      assert.equal(r.threadId, "rd");
      assert.deepEqual(await r.filesystem.listDir("/workspace", ctxOf(r)), ["sub"]);
      assert.deepEqual(await r.filesystem.lstat("/workspace/sub/x.txt", ctxOf(r)), { kind: "file", size: 1, executable: false });
      await assert.rejects(r.filesystem.readFile("/workspace/none", ctxOf(r)), /No such file/);
      // what the old snapshot reader could not see: empty directories, binary bytes, mtimes,
      // and writes made after the open (a live view, not a snapshot)
      await h.filesystem.mkdir("/workspace/empty", ctxOf(h));
      await h.filesystem.writeFile("/workspace/late.txt", "late", ctxOf(h));
      assert.deepEqual(await r.filesystem.listDir("/workspace", ctxOf(r)), ["empty", "late.txt", "sub"]);
      assert.deepEqual(await r.filesystem.listDir("/workspace/empty", ctxOf(r)), []);
      assert.equal(await r.filesystem.readFile("/workspace/late.txt", ctxOf(r)), "late");
      assert.ok((await r.filesystem.statFile("/workspace/sub/x.txt", ctxOf(r))).mtimeMs > 0, "mtimeMs");
      const walked = await r.filesystem.walkTree("/workspace", ctxOf(r), { maxEntries: 100 });
      assert.deepEqual(walked.map((e) => [e.path, e.kind]), [["empty", "directory"], ["late.txt", "file"], ["sub", "directory"], ["sub/x.txt", "file"]]);
      await assert.rejects(r.filesystem.walkTree("/workspace", ctxOf(r), { maxEntries: 1 }), /Workspace entries limit exceeded/);
      for (const m of ["writeFile", "mkdir", "removeFile", "touchFile", "realPath"]) assert.equal(r.filesystem[m], undefined, m);
      await p.release("rd"); // the reader needs no compute
      assert.equal(await r.filesystem.readFile("/workspace/sub/x.txt", ctxOf(r)), "x");
      await r.close();
      await r.close();
      await assert.rejects(r.filesystem.readFile("/workspace/sub/x.txt", ctxOf(r)), /Workspace reader for thread "rd" is closed/);
      await assert.rejects(withWorkspaceReader(b4boxSandbox({ url: servers.plain.url }), { threadId: "rd", signal }, async () => {}));
      const plain = b4boxSandbox({ url: servers.plain.url });
      await plain.acquire({ threadId: "rd2", policy, signal });
      await assert.rejects(plain.openWorkspaceReader({ threadId: "rd2", signal }), (e) => e instanceof B4boxError && e.code === "not_supported");
      await plain.destroy("rd2");
      await assert.rejects(p.openWorkspaceReader({ threadId: "rd", signal: AbortSignal.abort() }), { name: "AbortError" });
      // a reader the server expired: reads say so, close() is still success
      const short = b4boxSandbox({ url: servers.fake.url, token: TOKEN, readerIdleTimeoutMs: 1000 });
      const e = await short.openWorkspaceReader({ threadId: "rd", signal });
      await new Promise((res) => setTimeout(res, 1300));
      await assert.rejects(e.filesystem.readFile("/workspace/sub/x.txt", ctxOf(e)), (x) => x instanceof B4boxError && x.code === "reader_not_found");
      await e.close();
    } finally {
      await p.destroy("rd");
    }
  });
});
