// B4.run's provider conformance suite (`runProviderConformance`, @b4run/sandbox/testing),
// ported: its package is not on the registry. The same eight cases with the same asserts
// (reference §8): acquire/reattach idempotency, per-thread isolation, release vs destroy,
// numeric exit codes, and, when the provider has openWorkspaceReader, the reader block.
// Every case destroys every thread id it used, always (as runProviderConformanceCase).
import assert from "node:assert/strict";
import { test } from "node:test";
import { randomUUID } from "node:crypto";
import { withWorkspaceReader } from "../dist/index.js";

const policy = { network: { mode: "allow" } };

// inspectWorkspace's essence for case 5: every regular file's text, keyed by relative path.
async function inspectFiles(reader, ctx) {
  const entries = await reader.filesystem.walkTree(reader.workspaceRoot, ctx, { maxEntries: 10_000 });
  const files = {};
  for (const e of entries)
    if (e.kind === "file") files[e.path] = await reader.filesystem.readFile(`${reader.workspaceRoot}/${e.path}`, ctx);
  return files;
}

export function runProviderConformance({ name, makeProvider }) {
  const signal = new AbortController().signal;
  const ids = (n) => Array.from({ length: n }, (_, i) => `conf-${i}-${randomUUID()}`);
  const ctxOf = (h) => ({ signal, workspaceRoot: h.workspaceRoot });

  async function conformanceCase(provider, used, body) {
    let bodyError;
    try {
      await body();
    } catch (e) {
      bodyError = e;
    }
    const cleanup = await Promise.allSettled(used.map((id) => provider.destroy(id)));
    const cleanupErrors = cleanup.filter((r) => r.status === "rejected").map((r) => r.reason);
    if (bodyError && cleanupErrors.length)
      throw new AggregateError([bodyError, ...cleanupErrors], "SandboxProvider conformance body and cleanup failed");
    if (bodyError) throw bodyError;
    if (cleanupErrors.length) throw new AggregateError(cleanupErrors, "SandboxProvider conformance cleanup failed");
  }

  const cases = [
    ["acquire is idempotent per thread and reattaches the workspace", async (p) => {
      const [t1] = ids(1);
      return [[t1], async () => {
        const h1 = await p.acquire({ threadId: t1, policy, signal });
        await h1.filesystem.writeFile(`${h1.workspaceRoot}/x`, "1", ctxOf(h1));
        const h2 = await p.acquire({ threadId: t1, policy, signal });
        assert.equal(h2.threadId, t1);
        assert.equal(await h2.filesystem.readFile(`${h2.workspaceRoot}/x`, ctxOf(h2)), "1");
      }];
    }],
    ["threads are isolated", async (p) => {
      const [a, b] = ids(2);
      return [[a, b], async () => {
        const ha = await p.acquire({ threadId: a, policy, signal });
        await ha.filesystem.writeFile(`${ha.workspaceRoot}/secret`, "s", ctxOf(ha));
        const hb = await p.acquire({ threadId: b, policy, signal });
        assert.ok(!(await hb.filesystem.listDir(hb.workspaceRoot, ctxOf(hb))).includes("secret"));
      }];
    }],
    ["release keeps the volume, destroy clears it", async (p) => {
      const [t] = ids(1);
      return [[t], async () => {
        let h = await p.acquire({ threadId: t, policy, signal });
        await h.filesystem.writeFile(`${h.workspaceRoot}/keep`, "1", ctxOf(h));
        await p.release(t);
        h = await p.acquire({ threadId: t, policy, signal });
        assert.equal(await h.filesystem.readFile(`${h.workspaceRoot}/keep`, ctxOf(h)), "1");
        await p.destroy(t);
        h = await p.acquire({ threadId: t, policy, signal });
        assert.ok(!(await h.filesystem.listDir(h.workspaceRoot, ctxOf(h))).includes("keep"));
      }];
    }],
    ["exec returns a numeric exit code", async (p) => {
      const [t] = ids(1);
      return [[t], async () => {
        const h = await p.acquire({ threadId: t, policy, signal });
        const r = await h.exec.runCommand({ command: "true" }, ctxOf(h));
        assert.equal(typeof r.exitCode, "number");
      }];
    }],
  ];
  const readerCases = [
    ["a workspace reader sees what the thread produced", async (p) => {
      const [t] = ids(1);
      return [[t], async () => {
        const h = await p.acquire({ threadId: t, policy, signal });
        await h.filesystem.writeFile(`${h.workspaceRoot}/produced.txt`, "out", ctxOf(h));
        const files = await withWorkspaceReader(p, { threadId: t, signal }, (r) => inspectFiles(r, ctxOf(r)));
        assert.equal(files["produced.txt"], "out");
      }];
    }],
    ["a workspace reader exposes no write and no exec surface", async (p) => {
      const [t] = ids(1);
      return [[t], async () => {
        await p.acquire({ threadId: t, policy, signal });
        await withWorkspaceReader(p, { threadId: t, signal }, async (r) => {
          for (const m of ["writeFile", "mkdir", "removeFile", "touchFile"]) assert.equal(r.filesystem[m], undefined, m);
          assert.equal(r.exec, undefined);
        });
      }];
    }],
    ["opening a reader for a thread with no workspace storage rejects", async (p) => {
      const [t] = ids(1);
      return [[t], async () => {
        await p.acquire({ threadId: t, policy, signal });
        await p.destroy(t);
        await assert.rejects(withWorkspaceReader(p, { threadId: t, signal }, async () => {}));
      }];
    }],
    ["reading a workspace leaves the thread's sandbox usable", async (p) => {
      const [t] = ids(1);
      return [[t], async () => {
        const h = await p.acquire({ threadId: t, policy, signal });
        await h.filesystem.writeFile(`${h.workspaceRoot}/before`, "before", ctxOf(h));
        await withWorkspaceReader(p, { threadId: t, signal }, (r) => inspectFiles(r, ctxOf(r)));
        assert.equal(await h.filesystem.readFile(`${h.workspaceRoot}/before`, ctxOf(h)), "before");
        await h.filesystem.writeFile(`${h.workspaceRoot}/after`, "after", ctxOf(h));
        assert.equal(await h.filesystem.readFile(`${h.workspaceRoot}/after`, ctxOf(h)), "after");
        assert.equal((await h.exec.runCommand({ command: "true" }, ctxOf(h))).exitCode, 0);
      }];
    }],
  ];

  for (const [title, make] of [...cases, ...readerCases]) {
    const isReader = readerCases.some(([t]) => t === title);
    test(`SandboxProvider conformance: ${name} > ${title}`, async (t) => {
      const provider = await makeProvider();
      if (isReader && typeof provider.openWorkspaceReader !== "function") return t.skip("no openWorkspaceReader");
      const [used, body] = await make(provider);
      await conformanceCase(provider, used, body);
    });
  }
}
