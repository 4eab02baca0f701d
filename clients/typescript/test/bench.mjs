// What the client costs over a real server: median and p90 of N rounds per operation, on the
// fake provider and (as root) native, over TCP and a unix socket. Not part of the suite.
//   cd clients/typescript && npx tsc && B4BOX=../../build/src/cli/b4box node test/bench.mjs [N]
import { B4box, b4boxSandbox } from "../dist/index.js";
import { IS_ROOT, fakeConfig, nativeConfig, startServer, stopAll } from "./server.mjs";

const N = Number(process.argv[2] ?? 200);
const signal = new AbortController().signal;
const policy = { network: { mode: "allow" } };

async function measure(label, f) {
  const ms = [];
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    await f(i);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const q = (p) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))].toFixed(2);
  console.log(`${label.padEnd(48)} p50 ${q(0.5).padStart(7)} ms   p90 ${q(0.9).padStart(7)} ms`);
}

async function run(where, url) {
  const p = b4boxSandbox({ url });
  const h = await p.acquire({ threadId: "bench", policy, signal });
  const ctx = { signal, workspaceRoot: h.workspaceRoot };
  await measure(`${where}: acquire (reattach)`, () => p.acquire({ threadId: "bench", policy, signal }));
  await measure(`${where}: handle writeFile 1 KiB`, () => h.filesystem.writeFile("/workspace/f", "x".repeat(1024), ctx));
  await measure(`${where}: handle readFile 1 KiB`, () => h.filesystem.readFile("/workspace/f", ctx));
  await measure(`${where}: handle lstat`, () => h.filesystem.lstat("/workspace/f", ctx));
  await measure(`${where}: exec runCommand "true" (streamed)`, () => h.exec.runCommand({ command: "true" }, ctx));
  const t = new B4box({ url }).thread("bench");
  await measure(`${where}: thread.tool runBash "true" (plain JSON)`, () => t.tool("runBash", { command: "true" }));
  await measure(`${where}: acquire + destroy of a new thread`, async (i) => {
    await p.acquire({ threadId: `b-${i}`, policy, signal });
    await p.destroy(`b-${i}`);
  });
  await p.destroy("bench");
}

const servers = {
  fake: await startServer({ config: fakeConfig("ts-bench"), name: "bench-fake" }),
  fakeUnix: await startServer({ config: fakeConfig("ts-bench-u"), name: "bench-unix", listen: "unix" }),
};
if (IS_ROOT) servers.native = await startServer({ config: nativeConfig("ts-bench-n"), name: "bench-native" });
try {
  await run("fake tcp", servers.fake.url);
  await run("fake unix", servers.fakeUnix.url);
  if (servers.native) await run("native tcp", servers.native.url);
} finally {
  await stopAll(servers);
}
