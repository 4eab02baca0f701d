// The direct client against a real `b4box serve`: threads, files, commands (streamed, exit
// codes as results, abort), background processes (start, logs from an offset, follow, stdin,
// signal, wait, list, delete), typed errors, a unix: URL, the SSE parser's edge cases.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { B4box, B4boxError, BackgroundProcess, SseParser } from "../dist/index.js";
import { IS_ROOT, TOKEN, fakeConfig, nativeConfig, startFactoryServer, startServer, stopAll } from "./server.mjs";

const servers = {};
before(async () => {
  servers.fake = await startServer({ config: fakeConfig("ts-client"), name: "client" });
  servers.unix = await startFactoryServer({ provider: "fake", scope: "ts-unix", listen: "unix", name: "unix" });
  // native over a unix socket (the provider suite runs native over TCP): both roads stream
  if (IS_ROOT) servers.native = await startServer({ config: nativeConfig("ts-client-native"), name: "client-native", listen: "unix" });
  if (IS_ROOT) servers.nativeTcp = await startServer({ config: nativeConfig("ts-client-native-tcp"), name: "client-native-tcp" });
});
after(async () => {
  await stopAll(servers);
});

const fake = () => new B4box({ url: servers.fake.url });

describe("threads", () => {
  test("create, get, list, release, delete; a taken id and a missing thread are typed", async () => {
    const box = fake();
    const t = await box.threads.create({ id: "t-life", metadata: { task: "x" } });
    assert.equal(t.id, "t-life");
    assert.deepEqual(t.info.metadata, { task: "x" });
    assert.equal((await box.threads.get("t-life")).info.thread_id, "t-life");
    assert.ok((await box.threads.list()).some((x) => x.thread_id === "t-life"));
    await assert.rejects(box.threads.create({ id: "t-life" }), (e) => e instanceof B4boxError && e.status === 409 && e.code === "thread_exists");
    const named = await box.threads.create();
    assert.match(named.id, /^thr_[0-9a-f]{24}$/);
    await named.delete();
    assert.equal((await t.release()).sandbox.state, "released");
    await box.threads.delete("t-life");
    await assert.rejects(box.threads.get("t-life"), (e) => e instanceof B4boxError && e.status === 404 && e.code === "thread_not_found" && e.message === "thread 't-life' not found");
    await assert.rejects(box.threads.create({ id: "a/b" }), (e) => e.code === "invalid_request" && e.status === 400);
  });

  test("check: the effective policy and the controls", async () => {
    const t = await fake().threads.create({ id: "t-check" });
    const c = await t.check();
    assert.equal(c.threadId, "t-check");
    assert.equal(c.provider, "fake");
    assert.equal(c.ok, true);
    assert.equal(c.policy.network.mode, "allow");
    await t.delete();
  });

  test("pause and resume; pausing a thread with no live sandbox is a typed 409", async () => {
    const t = await fake().threads.create({ id: "t-pause" });
    await assert.rejects(t.pause(), (e) => e instanceof B4boxError && e.status === 409 && e.code === "thread_not_live");
    await t.files.write("x", "1");
    assert.equal((await t.pause()).sandbox.state, "paused");
    assert.equal((await t.resume()).sandbox.state, "live");
    await t.delete();
  });
});

describe("files", () => {
  test("write, read, ranges, bytes, edit, list, exists, stat, walk, remove", async () => {
    const t = await fake().threads.create({ id: "t-files" });
    const f = t.files;
    assert.deepEqual(await f.write("src/a.ts", "one\ntwo\nthree\n"), { path: "src/a.ts", bytes: 14 });
    assert.equal(await f.read("src/a.ts"), "one\ntwo\nthree\n");
    assert.equal(await f.read("src/a.ts", { startLine: 2, endLine: 3 }), "two\nthree");
    const bytes = new Uint8Array([0, 255, 1, 128, 10]);
    await f.write("bin/b", bytes);
    assert.deepEqual(Array.from(await f.readBytes("bin/b")), Array.from(bytes));
    assert.deepEqual(Array.from(await f.readBytes("bin/b", { offset: 1, length: 2 })), [255, 1]);
    assert.match(await f.edit("src/a.ts", { oldText: "two", newText: "2" }), /replaced 1 occurrence/);
    assert.equal(await f.read("src/a.ts"), "one\n2\nthree\n");
    await assert.rejects(f.edit("src/a.ts", { oldText: "absent", newText: "x" }), (e) => e instanceof B4boxError && e.code === "tool_error" && /oldText not found/.test(e.message));
    assert.deepEqual(await f.list("."), [{ name: "bin", kind: "directory" }, { name: "src", kind: "directory" }]);
    assert.equal(await f.exists("src/a.ts"), true);
    assert.equal(await f.exists("nope"), false);
    assert.equal((await f.stat("src/a.ts")).size, 12);
    assert.deepEqual((await f.walk(".")).map((e) => e.path), ["bin", "bin/b", "src", "src/a.ts"]);
    await f.remove("bin/b");
    assert.equal(await f.exists("bin/b"), false);
    await assert.rejects(f.read("src"), (e) => e instanceof B4boxError && e.code === "is_directory");
    await assert.rejects(f.read("missing"), (e) => e.code === "not_found" && e.status === 404);
    await t.delete();
  });
});

describe("commands", () => {
  test("a non-zero exit is a result, not an exception; stdout reaches onStdout", async () => {
    const t = await fake().threads.create({ id: "t-cmd" });
    const seen = [];
    const r = await t.commands.run("echo hello", { onStdout: (s) => seen.push(s) });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "hello\n");
    assert.deepEqual(seen, ["hello\n"]);
    const three = await t.commands.run("exit 3");
    assert.equal(three.exitCode, 3);
    assert.equal(typeof three.durationMs, "number");
    const unsupported = await t.commands.run("ls | wc");
    assert.equal(unsupported.exitCode, 127);
    await assert.rejects(t.commands.run("true", { timeoutMs: 0 }), (e) => e instanceof B4boxError && e.code === "invalid_arguments");
    await t.delete();
  });

  test("an aborted signal rejects with its AbortError before anything runs", async () => {
    const t = await fake().threads.create({ id: "t-abort0" });
    await assert.rejects(t.commands.run("echo x", { signal: AbortSignal.abort() }), { name: "AbortError" });
    await t.delete();
  });

  test("denials are typed errors (B4_E3001)", async () => {
    const srv = await startServer({
      name: "deny",
      config: { sandbox: { provider: { type: "fake", scope: "ts-deny" } }, permissions: { mode: "non-interactive", allow: { bash: ["echo "] } } },
    });
    try {
      const t = await new B4box({ url: srv.url }).threads.create({ id: "d" });
      assert.equal((await t.commands.run("echo ok")).stdout, "ok\n");
      await assert.rejects(t.commands.run("true"), (e) => e instanceof B4boxError && e.code === "B4_E3001" && e.registryCode === "B4_E3001");
    } finally {
      await srv.stop();
    }
  });

});

describe("background processes", () => {
  test("start, info, list, logs from an offset, stdin, signal, wait, delete", async () => {
    const t = await fake().threads.create({ id: "t-proc" });
    const p = await t.commands.start("echo hello world", { tag: "greet" });
    assert.equal(p.pid, 1);
    assert.equal(p.tag, "greet");
    const done = await p.wait();
    assert.equal(done.state, "exited");
    assert.equal(done.exitCode, 0);
    const fromSix = [];
    for await (const c of p.logs({ from: 6 })) fromSix.push(c);
    assert.deepEqual(fromSix.map((c) => [c.offset, c.text]), [[6, "world\n"]]);
    const plain = await p.readLogs(6);
    assert.equal(Buffer.from(plain.data).toString(), "world\n");
    assert.equal(plain.nextOffset, 12);
    assert.equal(plain.state, "exited");

    const sleeper = await t.commands.start("sleep 1000", { tag: "srv" });
    const running = await sleeper.wait({ timeoutMs: 100 });
    assert.equal(running.state, "running");
    assert.equal(running.exitCode, null);
    assert.deepEqual((await t.commands.list()).map((x) => x.pid), [1, 2]);
    const nofollow = [];
    for await (const c of sleeper.logs({ follow: false })) nofollow.push(c);
    assert.deepEqual(nofollow, []);
    await sleeper.signal("TERM");
    assert.equal((await sleeper.wait()).exitCode, 143);

    const cat = await t.commands.start("cat", { stdin: true });
    const got = [];
    const reading = (async () => {
      for await (const c of cat.logs()) got.push(c.text);
    })();
    await cat.sendStdin("line one\n");
    await cat.sendStdin(new Uint8Array(Buffer.from("line two\n")), { eof: true });
    await reading;
    assert.equal(got.join(""), "line one\nline two\n");
    await assert.rejects(cat.sendStdin("more"), (e) => e instanceof B4boxError && e.code === "stdin_closed");
    assert.equal((await (await t.commands.connect(cat.pid)).info()).pid, cat.pid);

    await sleeper.delete();
    await assert.rejects(sleeper.info(), (e) => e instanceof B4boxError && e.code === "process_not_found");
    await t.delete();
  });

});

describe("transport", () => {
  test("a unix: URL, with a bearer token; no token is a typed 401", async () => {
    assert.match(servers.unix.url, /^unix:\//);
    const box = new B4box({ url: servers.unix.url, token: TOKEN });
    assert.equal(await box.health(), true);
    const t = await box.threads.create({ id: "u1" });
    await t.files.write("f", "over a socket");
    assert.equal(await t.files.read("f"), "over a socket");
    assert.equal((await t.commands.run("echo sse over unix")).stdout, "sse over unix\n");
    await t.delete();
    await assert.rejects(new B4box({ url: servers.unix.url }).threads.list(), (e) => e instanceof B4boxError && e.status === 401 && e.code === "unauthorized");
  });

  test("no server: connection_failed; bad URLs are refused up front", async () => {
    await assert.rejects(new B4box({ url: "http://127.0.0.1:9" }).threads.list(), (e) => e instanceof B4boxError && e.status === 0 && e.code === "connection_failed");
    await assert.rejects(new B4box({ url: "unix:/nonexistent/b4.sock" }).threads.list(), (e) => e.code === "connection_failed");
    assert.throws(() => new B4box({ url: "unix:relative.sock" }), TypeError);
    assert.throws(() => new B4box({ url: "ftp://x" }), TypeError);
  });

  test("a request timeout is typed; a stream has none", async () => {
    // A listener that accepts and never answers.
    const sockets = [];
    const silent = net.createServer((c) => sockets.push(c));
    await new Promise((r) => silent.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${silent.address().port}`;
    try {
      const t0 = Date.now();
      await assert.rejects(new B4box({ url, requestTimeoutMs: 300 }).threads.list(), (e) => e instanceof B4boxError && e.code === "timeout" && e.status === 0);
      assert.ok(Date.now() - t0 < 5000);
      const ac = new AbortController();
      const run = new B4box({ url, requestTimeoutMs: 300 }).thread("x").commands.run("true", { signal: ac.signal });
      setTimeout(() => ac.abort(), 600);
      await assert.rejects(run, { name: "AbortError" }); // not the 300 ms timeout: streams wait
    } finally {
      for (const c of sockets) c.destroy();
      silent.close();
    }
  });
});

// Native (root): real commands, so real streaming, kills and timing. Top-level tests, so a
// run without root reports them as skips.
const native = IS_ROOT ? test : test.skip;

for (const road of ["unix", "tcp"]) {
  native(`native (${road}): streaming delivers 'a' before the command ends, in order, with offsets`, async () => {
    const t = await new B4box({ url: (road === "unix" ? servers.native : servers.nativeTcp).url }).threads.create({ id: "n-stream" });
    try {
      const t0 = Date.now();
      const chunks = [];
      let aAt;
      const r = await t.commands.run("echo a; sleep 1; echo b; echo e >&2", {
        onChunk: (c) => chunks.push(c),
        onStdout: (s) => {
          if (s.includes("a") && aAt === undefined) aAt = Date.now() - t0;
        },
      });
      const end = Date.now() - t0;
      assert.equal(r.exitCode, 0);
      assert.equal(r.stdout, "a\nb\n");
      assert.equal(r.stderr, "e\n");
      assert.ok(aAt !== undefined && end - aAt >= 800, `'a' at ${aAt} ms, end at ${end} ms`);
      assert.deepEqual(chunks.filter((c) => c.stream === "stdout").map((c) => [c.offset, c.text]), [[0, "a\n"], [2, "b\n"]]);
      const env = await t.commands.run("echo $FOO; pwd", { env: { FOO: "bar" }, cwd: "." });
      assert.equal(env.stdout, "bar\n/workspace\n");
      const slow = await t.commands.run("sleep 5", { timeoutMs: 300 });
      assert.equal(slow.exitCode, 124);
      assert.equal(slow.timedOut, true);
      const capped = await t.commands.run("head -c 5000 /dev/zero | tr '\\0' x", { maxOutputBytes: 100 });
      assert.equal(capped.truncated, true);
      assert.ok(capped.stdout.length < 200, capped.stdout.length);
    } finally {
      await t.delete();
    }
  });
}

native("native: a run in flight is waited for (busyRetryMs), or refused typed without it", async () => {
  const t = await new B4box({ url: servers.native.url }).threads.create({ id: "n-busy" });
  try {
    const slow = t.commands.run("sleep 0.6; echo slow");
    await new Promise((r) => setTimeout(r, 200));
    const once = new B4box({ url: servers.native.url, busyRetryMs: 0 }).thread("n-busy");
    await assert.rejects(once.commands.run("echo x"), (e) => e instanceof B4boxError && e.status === 409 && e.code === "run_in_flight" && e.retryAfter === 1);
    const waited = await t.commands.run("echo waited");
    assert.equal(waited.stdout, "waited\n");
    assert.equal((await slow).stdout, "slow\n");
  } finally {
    await t.delete();
  }
});

native("native: aborting a running command disconnects and the server kills it", async () => {
  const t = await new B4box({ url: servers.native.url }).threads.create({ id: "n-abort" });
  try {
    const ac = new AbortController();
    const run = t.commands.run("echo started; sleep 30; echo never", {
      signal: ac.signal,
      onStdout: (s) => s.includes("started") && ac.abort(),
    });
    await assert.rejects(run, { name: "AbortError" });
    // The killed command frees the thread's run slot within a keepalive (200 ms here); a
    // command left running would hold it for 30 s: a plain call, not retried, proves which.
    const once = new B4box({ url: servers.native.url, busyRetryMs: 0 }).thread("n-abort");
    const t0 = Date.now();
    for (;;) {
      const r = await once.tool("listDir", { path: "." }).then(() => "free", (e) => (e.code === "run_in_flight" ? "busy" : Promise.reject(e)));
      if (r === "free") break;
      assert.ok(Date.now() - t0 < 5000, "the run slot is still held 5 s after the abort");
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok((await t.files.list(".")).every((e) => e.name !== "never"));
  } finally {
    await t.delete();
  }
});

native("native: logs follow a running process, and a reconnect from an offset gets the rest once", async () => {
  const t = await new B4box({ url: servers.native.url }).threads.create({ id: "n-proc" });
  try {
    const e = await t.commands.start("echo $X; pwd", { env: { X: "from-env" }, cwd: "." });
    assert.equal((await e.wait()).exitCode, 0);
    assert.equal(Buffer.from((await e.readLogs()).data).toString(), "from-env\n/workspace\n");
    const p = await t.commands.start("for i in 1 2 3; do echo $i; sleep 0.3; done");
    const first = [];
    const ac = new AbortController();
    await assert.rejects(
      (async () => {
        for await (const c of p.logs({ signal: ac.signal })) {
          first.push(c);
          ac.abort();
        }
      })(),
      { name: "AbortError" },
    );
    assert.deepEqual(first.map((c) => c.text), ["1\n"]);
    const rest = [];
    for await (const c of p.logs({ from: first[0].offset + 2 })) rest.push(c.text);
    assert.equal(rest.join(""), "2\n3\n");
    const fin = await p.wait();
    assert.equal(fin.exitCode, 0);
    assert.equal(fin.bytes, 6);
  } finally {
    await t.delete();
  }
});

describe("log reconnects (a scripted server)", () => {
  // A server that plays b4box's logs route badly on purpose: the first stream drops before
  // the exit event, the second replays bytes already sent. The client must ask again from
  // the next offset and deliver each byte once.
  test("a dropped follow resumes from the next offset; a replayed prefix is trimmed", async () => {
    const asked = [];
    const srv = http.createServer((req, res) => {
      const from = Number(new URL(req.url, "http://x").searchParams.get("from"));
      asked.push(from);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ev = (name, data, id) => res.write(`event: ${name}\n${id === undefined ? "" : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`);
      if (asked.length === 1) {
        ev("stdout", { offset: 0, text: "one\n" }, 0);
        ev("stdout", { offset: 4, text: "two\n" }, 4);
        setTimeout(() => res.destroy(), 50); // dropped mid-stream, once the chunks are out
      } else {
        ev("stdout", { offset: 4, text: "two\nthree\n" }, 4); // replays "two\n"
        res.write(": keepalive\n\n");
        ev("exit", { pid: 1, state: "exited", exitCode: 0 });
        res.end();
      }
    });
    await new Promise((r) => srv.listen(0, "127.0.0.1", r));
    try {
      const box = new B4box({ url: `http://127.0.0.1:${srv.address().port}` });
      const proc = new BackgroundProcess(box.connection, "x", 1, null);
      const got = [];
      for await (const c of proc.logs({ from: 0 })) got.push([c.offset, c.text]);
      assert.deepEqual(asked, [0, 8]);
      assert.deepEqual(got, [[0, "one\n"], [4, "two\n"], [8, "three\n"]]);
    } finally {
      srv.close();
    }
  });
});

describe("runBash streams that end badly (a scripted server)", () => {
  async function scripted(handler, f) {
    const srv = http.createServer(handler);
    await new Promise((r) => srv.listen(0, "127.0.0.1", r));
    try {
      await f(new B4box({ url: `http://127.0.0.1:${srv.address().port}` }).thread("x"));
    } finally {
      srv.closeAllConnections();
      srv.close();
    }
  }
  const sse = (res) => res.writeHead(200, { "content-type": "text/event-stream" });
  test("cut before the exit event: connection_failed, and the chunks that came were delivered", () =>
    scripted((req, res) => {
      sse(res);
      res.write('event: stdout\nid: 0\ndata: {"offset":0,"text":"partial\\n"}\n\n');
      setTimeout(() => res.destroy(), 50);
    }, async (t) => {
      const seen = [];
      await assert.rejects(t.commands.run("x", { onStdout: (s) => seen.push(s) }), (e) => e instanceof B4boxError && e.code === "connection_failed" && e.status === 0);
      assert.deepEqual(seen, ["partial\n"]);
    }));
  test("an error event (the run failed inside) is a typed stream_error", () =>
    scripted((req, res) => {
      sse(res);
      res.end('event: error\ndata: {"message":"out of memory"}\n\n');
    }, async (t) => {
      await assert.rejects(t.commands.run("x"), (e) => e instanceof B4boxError && e.code === "stream_error" && e.message === "out of memory");
    }));
  test("an exit event carrying a tool failure is that failure", () =>
    scripted((req, res) => {
      sse(res);
      res.end('event: exit\ndata: {"ok":false,"error":{"code":"B4_E3001","message":"Permission denied (fail-closed): x"}}\n\n');
    }, async (t) => {
      await assert.rejects(t.commands.run("x"), (e) => e instanceof B4boxError && e.code === "B4_E3001");
    }));
});

describe("SSE parser", () => {
  const parse = (chunks) => {
    const p = new SseParser();
    const enc = new TextEncoder();
    const out = [];
    for (const c of chunks) out.push(...p.push(typeof c === "string" ? enc.encode(c) : c));
    out.push(...p.end());
    return out;
  };
  test("frames split anywhere, CRLF and CR line ends, multi-line data, comments, ids carried", () => {
    const text = "\uFEFFevent: stdout\r\nid: 5\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: keepalive\n\ndata:x\rid:9\r\r";
    for (let cut = 0; cut <= text.length; cut++) {
      const items = parse([text.slice(0, cut), text.slice(cut)]);
      assert.deepEqual(items, [
        { kind: "event", value: { event: "stdout", data: '{"a":\n1}', id: "5" } },
        { kind: "comment", text: "keepalive" },
        { kind: "event", value: { event: "message", data: "x", id: "9" } },
      ], `cut at ${cut}`);
    }
  });
  test("a multi-byte character split across chunks; an unterminated frame is dropped", () => {
    const b = new TextEncoder().encode("data: é\n\ndata: partial");
    assert.deepEqual(parse([b.slice(0, 7), b.slice(7)]), [{ kind: "event", value: { event: "message", data: "é", id: undefined } }]);
  });
});
