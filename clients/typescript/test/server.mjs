// Starts a real `b4box serve` for a test file: the binary from $B4BOX (meson passes the
// build's), a config written to a temporary directory, state there too, and the address the
// server printed (`msg=serving address=...`). `stop()` sends SIGTERM to that one process and
// removes the directory. Nothing else is started or killed.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export const B4BOX = process.env.B4BOX || path.resolve(import.meta.dirname, "../../../build-dbg/src/cli/b4box");
export const IS_ROOT = typeof process.getuid === "function" && process.getuid() === 0;

export function tempDir(name) {
  return mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), `b4ts-${name}-`));
}

/**
 * startServer({config, listen: "tcp" | "unix", name}) -> {url, dir, log(), stop()}
 * `config` is the b4box.json object; `files` ({relpath: text|{text, mode}}) are written
 * beside it first (resolvers, token files).
 */
export async function startServer({ config, listen = "tcp", name = "srv", files = {} }) {
  const dir = tempDir(name);
  for (const [rel, v] of Object.entries(files)) {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    if (v === null) {
      mkdirSync(p, { recursive: true });
      continue;
    }
    writeFileSync(p, typeof v === "string" ? v : v.text);
    if (typeof v === "object" && v.mode) chmodSync(p, v.mode);
  }
  const cfgPath = path.join(dir, "b4box.json");
  writeFileSync(cfgPath, JSON.stringify(typeof config === "function" ? config(dir) : config));
  const addr = listen === "unix" ? `unix:${path.join(dir, "b4box.sock")}` : "127.0.0.1:0";
  const child = spawn(B4BOX, ["-c", cfgPath, "--state", path.join(dir, "state"), "serve", "--listen", addr], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`b4box did not start:\n${log}`)), 15_000);
    child.stderr.on("data", (d) => {
      log += d;
      const m = /msg=serving address=(\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1].startsWith("unix:") ? m[1] : `http://${m[1]}`);
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`b4box exited (${code}) before serving:\n${log}`));
    });
  });
  return {
    url,
    dir,
    log: () => log,
    /** SIGTERM; a server that does not exit 0, or whose log has a sanitizer report, fails. */
    async stop() {
      let code = child.exitCode;
      if (code === null) {
        const exited = new Promise((r) => child.once("exit", (c, sig) => r(c ?? sig)));
        child.kill("SIGTERM");
        code = await exited;
      }
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0 || /Sanitizer|runtime error:/.test(log))
        throw new Error(`b4box serve (${name}) ended with ${code}:\n${log.split("\n").slice(-40).join("\n")}`);
    },
  };
}

/** The fake provider, no policy: what most tests run against. */
export const fakeConfig = (scope, extra = {}) => ({
  server: { streamKeepaliveMs: 200 },
  sandbox: { provider: { type: "fake", scope } },
  permissions: { mode: "bypass" },
  ...extra,
});

/** The native provider (root only): real commands, real streaming. */
export const nativeConfig = (scope) => ({
  server: { streamKeepaliveMs: 200 },
  sandbox: {
    provider: { type: "native", scope },
    network: { mode: "deny" },
    resources: { memoryMb: 256, timeoutMs: 60_000 },
  },
  permissions: { mode: "bypass" },
});

export const TOKEN = "ts-client-token-0123456789";
const ALL_OPS = ["thread.create", "thread.read", "thread.update", "thread.delete", "thread.run", "thread.workspace",
  "workspace.source.put", "workspace.source.read", "workspace.source.delete", "thread.approve"];

/**
 * A software-factory server (seed 001): a thread-access policy (one bearer token), a thread
 * resolver that hands a thread its staged workspace (or an empty one), staged uploads and
 * HTTP workspace reads. `provider` is "fake" or "native".
 */
export function startFactoryServer({ provider = "fake", scope = "ts-factory", listen = "tcp", name = "factory", network = "allow" } = {}) {
  const resolver = `#!${process.execPath}
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const d = JSON.parse(s);
  process.stdout.write(JSON.stringify({ workspace: d.staged ?? { source: { directory: "empty", include: [] } } }));
});
`;
  return startServer({
    name,
    listen,
    files: { "resolve.mjs": { text: resolver, mode: 0o755 }, "token": `${TOKEN}\n`, "empty": null },
    config: (dir) => ({
      server: { streamKeepaliveMs: 200 },
      sandbox: {
        provider: { type: provider, scope },
        thread: { command: [path.join(dir, "resolve.mjs")] },
        stagedWorkspaces: true,
        workspaceRead: "http",
        network: { mode: network },
        ...(provider === "native" ? { resources: { memoryMb: 256, timeoutMs: 60_000 } } : {}),
      },
      permissions: { mode: "bypass" },
      threadAccess: { principals: [{ name: "ts", tokenFile: path.join(dir, "token"), operations: ALL_OPS, threads: "all" }] },
    }),
  });
}

/** Stop every server (all of them, even when one fails), then report the failures. */
export async function stopAll(servers) {
  const r = await Promise.allSettled(Object.values(servers).map((s) => s.stop()));
  const bad = r.filter((x) => x.status === "rejected").map((x) => x.reason);
  if (bad.length) throw new AggregateError(bad, bad.map((e) => e.message).join("\n"));
}
