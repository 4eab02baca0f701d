// b4box's MCP server driven by the official SDK client (@modelcontextprotocol/sdk), over
// stdio (`b4box mcp` on a temp state dir) and Streamable HTTP (a `b4box serve` this test
// starts): fake provider always, native when root. Run: node --test tests/mcp/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
// the v2 client, for the 2026-07-28 (modern, stateless) era
import { Client as Client2, StreamableHTTPClientTransport as HTTP2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as Stdio2 } from '@modelcontextprotocol/client/stdio';

const here = dirname(fileURLToPath(import.meta.url));
const B4BOX = process.env.B4BOX || join(here, '../../build-dbg/src/cli/b4box');
const FIVE = ['editFile', 'listDir', 'readFile', 'runBash', 'writeFile'];
const root = process.getuid && process.getuid() === 0;
const dirs = [];

function workdir(provider, extra = {}) {
  const d = mkdtempSync(join(tmpdir(), 'b4box-mcp-'));
  dirs.push(d);
  writeFileSync(join(d, 'b4box.json'),
                JSON.stringify({ sandbox: { provider: { type: provider, scope: 'mcptest' } }, ...extra }));
  return d;
}

async function stdioClient(dir, args) {
  const c = new Client({ name: 'b4box-test', version: '0' });
  await c.connect(new StdioClientTransport({ command: B4BOX, args: ['--state', join(dir, 'st'), 'mcp', ...args],
                                             cwd: dir, stderr: 'ignore' }));
  return c;
}

after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

test('stdio, bound: five tools, schemas, annotations', async () => {
  const c = await stdioClient(workdir('fake'), ['--thread', 'demo']);
  const { tools } = await c.listTools();
  assert.deepEqual(tools.map(t => t.name).sort(), FIVE);
  const by = Object.fromEntries(tools.map(t => [t.name, t]));
  assert.deepEqual(by.readFile.inputSchema.required, ['path']);
  assert.deepEqual(Object.keys(by.runBash.inputSchema.properties).sort(),
                   ['command', 'cwd', 'env', 'maxOutputBytes', 'timeoutMs']);
  assert.equal(by.runBash.inputSchema.properties.thread_id, undefined);
  assert.equal(by.runBash.outputSchema.type, 'object');
  assert.equal(by.readFile.annotations.readOnlyHint, true);
  assert.equal(by.writeFile.annotations.idempotentHint, true);
  assert.equal(by.editFile.annotations.idempotentHint, false);
  assert.equal(by.runBash.annotations.destructiveHint, true);
  await c.close();
});

test('stdio: results, isError, -32602', async () => {
  const c = await stdioClient(workdir('fake'), ['--thread', 'demo']);
  const w = await c.callTool({ name: 'writeFile', arguments: { path: 'a.txt', content: 'x\ny\n' } });
  assert.equal(w.isError, false);
  const r = await c.callTool({ name: 'readFile', arguments: { path: 'a.txt' } });
  assert.equal(r.content[0].text, 'x\ny\n');
  const b = await c.callTool({ name: 'runBash', arguments: { command: 'no such command here' } });
  assert.equal(b.isError, false, 'a non-zero exit is not isError');
  assert.notEqual(b.structuredContent.exitCode, 0);
  assert.equal(typeof b.structuredContent.stdout, 'string');
  const e = await c.callTool({ name: 'readFile', arguments: { path: 'nope' } });
  assert.equal(e.isError, true);
  assert.match(e.content[0].text, /No such file or directory/);
  await assert.rejects(c.callTool({ name: 'nope', arguments: {} }), /-32602/);
  const bad = await c.callTool({ name: 'readFile', arguments: { path: 'a.txt', thread_id: 'other' } });
  assert.equal(bad.isError, true);
  await c.close();
});

test('stdio, unbound: thread_id required; lifecycle tools opt-in', async () => {
  const dir = workdir('fake');
  let c = await stdioClient(dir, []);
  let { tools } = await c.listTools();
  assert.deepEqual(tools.map(t => t.name).sort(), FIVE);
  assert.ok(tools.every(t => t.inputSchema.required.includes('thread_id')));
  const miss = await c.callTool({ name: 'listDir', arguments: {} });
  assert.equal(miss.isError, true);
  assert.match(miss.content[0].text, /thread_id is required/);
  const ok = await c.callTool({ name: 'listDir', arguments: { thread_id: 't1' } });
  assert.equal(ok.isError, false);
  await c.close();
  c = await stdioClient(dir, ['--lifecycle-tools']);
  ({ tools } = await c.listTools());
  assert.deepEqual(tools.map(t => t.name).sort(),
                   [...FIVE, 'createThread', 'deleteThread', 'listThreads', 'releaseThread'].sort());
  assert.match(tools.find(t => t.name === 'createThread').description, /idleTimeoutMs/);
  const l = await c.callTool({ name: 'listThreads', arguments: {} });
  assert.equal(l.isError, false);
  assert.match(l.content[0].text, /t1/);
  await c.close();
});

test('inspector CLI lists the tools over stdio', () => {
  const dir = workdir('fake');
  const out = execFileSync(join(here, 'node_modules/.bin/mcp-inspector'),
                           ['--cli', B4BOX, '--state', join(dir, 'st'), 'mcp', '--thread', 'demo',
                            '--method', 'tools/list'], { cwd: dir, encoding: 'utf8', timeout: 60000 });
  assert.deepEqual(JSON.parse(out).tools.map(t => t.name).sort(), FIVE);
});

// ---- Streamable HTTP ----

let server, base, httpDir, serverLog = '';
const TOKEN_A = 'token-of-principal-a-0123456789';
const TOKEN_B = 'token-of-principal-b-0123456789';

before(async () => {
  httpDir = workdir('fake', { threadAccess: { principals: [
    { name: 'a', tokenEnv: 'MCP_TOKEN_A', operations: ['thread.create', 'thread.read', 'thread.run'] },
    { name: 'b', tokenEnv: 'MCP_TOKEN_B', operations: ['thread.create', 'thread.read', 'thread.run'] }] } });
  server = spawn(B4BOX, ['--state', join(httpDir, 'st'), 'serve', '--listen', '127.0.0.1:0'],
                 { cwd: httpDir, env: { ...process.env, MCP_TOKEN_A: TOKEN_A, MCP_TOKEN_B: TOKEN_B },
                   stdio: ['ignore', 'ignore', 'pipe'] });
  base = await new Promise((resolve, reject) => {
    server.stderr.on('data', d => {
      serverLog += d;
      const log = serverLog;
      const m = log.match(/(?:listen|address)=(?:"?)(127\.0\.0\.1:\d+)/);
      if (m) resolve(`http://${m[1]}`);
    });
    server.on('exit', () => reject(new Error('serve exited: ' + serverLog)));
  });
  for (const [tok, id] of [[TOKEN_A, 'ta'], [TOKEN_B, 'tb']]) {
    const r = await fetch(`${base}/threads`, { method: 'POST', body: JSON.stringify({ thread_id: id }),
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${tok}` } });
    assert.equal(r.status, 201);
  }
});

after(async () => { if (server) await stopServer(server, () => serverLog); });

async function httpClient(token) {
  const c = new Client({ name: 'b4box-test', version: '0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`),
                  { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return c;
}

test('http: tools, runBash, policy denial', async () => {
  const c = await httpClient(TOKEN_A);
  const { tools } = await c.listTools();
  assert.deepEqual(tools.map(t => t.name).sort(), FIVE);
  const r = await c.callTool({ name: 'runBash', arguments: { thread_id: 'ta', command: 'x' } });
  assert.equal(r.isError, false);
  assert.equal(typeof r.structuredContent.exitCode, 'number');
  const denied = await c.callTool({ name: 'listDir', arguments: { thread_id: 'tb' } });
  assert.equal(denied.isError, true, "b's thread is refused to a");
  assert.match(denied.content[0].text, /not found/);
  await assert.rejects(c.callTool({ name: 'nope', arguments: {} }), /-32602/);
  await c.close();
});

test('http: bad Origin, no token, GET, modern era', async () => {
  const h = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
              Authorization: `Bearer ${TOKEN_A}` };
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  assert.equal((await fetch(`${base}/mcp`, { method: 'POST', body: ping,
                headers: { ...h, Origin: 'http://evil.example' } })).status, 403);
  assert.equal((await fetch(`${base}/mcp`, { method: 'POST', body: ping,
                headers: { ...h, Authorization: 'Bearer wrong-token-0123456789' } })).status, 401);
  assert.equal((await fetch(`${base}/mcp`, { headers: h })).status, 405);
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
  const modern = (method, params, extra = {}) => fetch(`${base}/mcp`, { method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: meta } }),
    headers: { ...h, 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method, ...extra } });
  let r = await modern('server/discover', {});
  assert.equal(r.status, 200);
  let j = await r.json();
  assert.ok(j.result.supportedVersions.includes('2026-07-28'));
  assert.equal(j.result.resultType, 'complete');
  r = await modern('tools/list', {});
  j = await r.json();
  assert.equal(j.result.resultType, 'complete');
  assert.equal(typeof j.result.ttlMs, 'number');
  r = await modern('tools/call', { name: 'listDir', arguments: { thread_id: 'ta' } }, { 'Mcp-Name': 'readFile' });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32020);
  r = await modern('nope/nope', {});
  assert.equal(r.status, 404);
  assert.equal((await r.json()).error.code, -32601);
  r = await fetch(`${base}/mcp`, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: 8,
    method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } } }) });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, -32022);
});

test('inspector CLI lists the tools over HTTP', () => {
  const out = execFileSync(join(here, 'node_modules/.bin/mcp-inspector'),
                           ['--cli', `${base}/mcp`, '--transport', 'http', '--header',
                            `Authorization: Bearer ${TOKEN_A}`, '--method', 'tools/list'],
                           { encoding: 'utf8', timeout: 60000 });
  assert.deepEqual(JSON.parse(out).tools.map(t => t.name).sort(), FIVE);
});

test('modern era (v2 client, 2026-07-28): stdio pinned and auto, HTTP pinned', async () => {
  const dir = workdir('fake');
  const check = async c => {
    assert.equal(c.getNegotiatedProtocolVersion(), '2026-07-28');
    assert.deepEqual((await c.listTools()).tools.map(t => t.name).sort(), FIVE);
    const r = await c.callTool({ name: 'runBash', arguments: { thread_id: 'ta', command: 'x' } });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(typeof r.structuredContent.exitCode, 'number');
    assert.equal((await c.callTool({ name: 'readFile', arguments: { thread_id: 'ta', path: 'nope' } })).isError, true);
    await assert.rejects(c.callTool({ name: 'nope', arguments: {} }), /Unknown tool/);
    await c.close();
  };
  for (const mode of [{ pin: '2026-07-28' }, 'auto']) {
    const c = new Client2({ name: 'b4box-test', version: '0' }, { versionNegotiation: { mode } });
    await c.connect(new Stdio2({ command: B4BOX, args: ['--state', join(dir, 'st'), 'mcp', '--thread', 'ta'],
                                 cwd: dir, stderr: 'ignore' }));
    await check(c);
  }
  const c = new Client2({ name: 'b4box-test', version: '0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await c.connect(new HTTP2(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${TOKEN_A}` } } }));
  await check(c);
});

// ---- native (root): progress, cancel, queueing ----

function alive(marker) {
  return readdirSync('/proc').filter(p => /^\d+$/.test(p)).some(p => {
    try { return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker); } catch { return false; }
  });
}

// A local native sandbox outlives `b4box mcp` (warm for the next command): destroy it.
function destroyLocal(dir, thread) {
  execFileSync(B4BOX, ['--state', join(dir, 'st'), 'destroy', thread], { cwd: dir, stdio: 'ignore' });
}

test('native: progress, cancel kills the command, parallel calls queue', { skip: !root && 'needs root' }, async t => {
  const ndir = workdir('native');
  t.after(() => destroyLocal(ndir, 'n1'));
  const c = await stdioClient(ndir, ['--thread', 'n1']);
  const seen = [];
  const slow = await c.callTool({ name: 'runBash', arguments: { command: 'for i in 1 2 3; do echo line$i; sleep 0.4; done' } },
                                CallToolResultSchema, { onprogress: p => seen.push(p), resetTimeoutOnProgress: true });
  assert.equal(slow.isError, false, JSON.stringify(slow));
  assert.equal(slow.structuredContent.exitCode, 0);
  assert.ok(seen.length >= 1, 'progress notifications arrived');
  assert.ok(seen.some(p => /^line[12]$/.test(p.message || '')), JSON.stringify(seen));

  const marker = `sleep 87${process.pid % 1000}`;
  const ac = new AbortController();
  const p = c.callTool({ name: 'runBash', arguments: { command: `${marker}; echo done` } },
                       CallToolResultSchema, { signal: ac.signal });
  for (let i = 0; i < 100 && !alive(marker); i++) await new Promise(r => setTimeout(r, 50));
  assert.ok(alive(marker), 'the command runs');
  ac.abort();
  await assert.rejects(p);
  for (let i = 0; i < 100 && alive(marker); i++) await new Promise(r => setTimeout(r, 50));
  assert.ok(!alive(marker), 'the cancelled command is gone');

  const t0 = Date.now();
  const all = await Promise.all([1, 2, 3].map(i =>
    c.callTool({ name: 'runBash', arguments: { command: `sleep 0.3; echo p${i}` } })));
  assert.ok(all.every(r => !r.isError && r.structuredContent.exitCode === 0), JSON.stringify(all));
  assert.ok(Date.now() - t0 >= 850, 'the calls ran one after another on the thread slot');
  await c.close();
});

// ---- a server of its own: --server (stdio through HTTP), and native over HTTP ----

async function serve(dir, env = {}, args = []) {
  const p = spawn(B4BOX, ['--state', join(dir, 'st'), 'serve', '--listen', '127.0.0.1:0', ...args],
                  { cwd: dir, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    p.stderr.on('data', d => {
      log += d;
      const m = log.match(/(?:listen|address)=(?:"?)(127\.0\.0\.1:\d+)/);
      if (m) resolve(`http://${m[1]}`);
    });
    p.on('exit', () => reject(new Error('serve exited: ' + log)));
  });
  return { p, url, stop: () => stopServer(p, () => log) };
}

// SIGTERM, wait for the exit, and fail on a sanitizer report (an ASan build's leak check).
async function stopServer(p, log) {
  if (p.exitCode === null) {
    const gone = new Promise(r => p.on('exit', r));
    p.kill('SIGTERM');
    await gone;
  }
  assert.doesNotMatch(log(), /Sanitizer|runtime error:/, log());
}

async function createThread(url, id) {
  const r = await fetch(`${url}/threads`, { method: 'POST', body: JSON.stringify({ thread_id: id }),
                                           headers: { 'Content-Type': 'application/json' } });
  assert.equal(r.status, 201);
}

test('stdio --server: the tools through a server, busy slots queue', async () => {
  const { url, stop } = await serve(workdir('fake'));
  try {
    await createThread(url, 'rs');
    const c = await stdioClient(workdir('fake'), ['--thread', 'rs', '--server', url]);
    const { tools } = await c.listTools();
    assert.deepEqual(tools.map(t => t.name).sort(), FIVE);
    const w = await c.callTool({ name: 'writeFile', arguments: { path: 'r.txt', content: 'remote' } });
    assert.equal(w.isError, false, JSON.stringify(w));
    const r = await c.callTool({ name: 'readFile', arguments: { path: 'r.txt' } });
    assert.equal(r.content[0].text, 'remote');
    const e = await c.callTool({ name: 'readFile', arguments: { path: 'nope' } });
    assert.equal(e.isError, true);
    await c.close();
    const u = await stdioClient(workdir('fake'), ['--server', url]);
    const gone = await u.callTool({ name: 'listDir', arguments: { thread_id: 'never-made' } });
    assert.equal(gone.isError, true);
    assert.match(gone.content[0].text, /not found/);
    await u.close();
  } finally { await stop(); }
});

test('native over HTTP: progress on SSE, cancel kills the command, parallel calls queue',
     { skip: !root && 'needs root' }, async () => {
  /* a keepalive every 500 ms: a closed stream is noticed at the next one */
  const { url, stop } = await serve(workdir('native', { server: { streamKeepaliveMs: 500 } }));
  try {
    await createThread(url, 'hn');
    const c = new Client({ name: 'b4box-test', version: '0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`));
    await c.connect(transport);
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
    const seen = [];
    const slow = await c.callTool({ name: 'runBash', arguments: { thread_id: 'hn', command: 'for i in 1 2 3; do echo l$i; sleep 0.4; done' } },
                                  CallToolResultSchema, { onprogress: q => seen.push(q), resetTimeoutOnProgress: true });
    assert.equal(slow.isError, false, JSON.stringify(slow));
    assert.ok(seen.some(q => /^l[12]$/.test(q.message || '')), JSON.stringify(seen));

    const marker = `sleep 86${process.pid % 1000}`;
    const ac = new AbortController();
    const pending = c.callTool({ name: 'runBash', arguments: { thread_id: 'hn', command: `${marker}; echo done` } },
                               CallToolResultSchema, { signal: ac.signal });
    for (let i = 0; i < 100 && !alive(marker); i++) await new Promise(r => setTimeout(r, 50));
    assert.ok(alive(marker), 'the command runs');
    ac.abort();
    await assert.rejects(pending);
    for (let i = 0; i < 100 && alive(marker); i++) await new Promise(r => setTimeout(r, 50));
    assert.ok(!alive(marker), 'the cancelled command is gone');

    // the 2026-07-28 way (and any client's): closing the call's SSE stream cancels it
    const marker2 = `sleep 85${process.pid % 1000}`;
    const ac2 = new AbortController();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {
      name: 'runBash', arguments: { thread_id: 'hn', command: marker2 }, _meta: { progressToken: 'k' } } });
    const res = await fetch(`${url}/mcp`, { method: 'POST', body, signal: ac2.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' } });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    for (let i = 0; i < 100 && !alive(marker2); i++) await new Promise(r => setTimeout(r, 50));
    assert.ok(alive(marker2), 'the streamed command runs');
    ac2.abort();
    for (let i = 0; i < 400 && alive(marker2); i++) await new Promise(r => setTimeout(r, 50));
    assert.ok(!alive(marker2), 'closing the stream killed the command');

    const t0 = Date.now();
    const all = await Promise.all([1, 2, 3].map(i =>
      c.callTool({ name: 'runBash', arguments: { thread_id: 'hn', command: `sleep 0.3; echo q${i}` } })));
    assert.ok(all.every(r => !r.isError && r.structuredContent.exitCode === 0), JSON.stringify(all));
    assert.ok(Date.now() - t0 >= 850, 'one after another on the thread slot');
    await c.close();
  } finally {
    await fetch(`${url}/threads/hn`, { method: 'DELETE' }).catch(() => {});
    await stop();
  }
});

test('http, serve --mcp-lifecycle-tools: lifecycle tools behind the policy', async () => {
  const ops = ['thread.create', 'thread.read', 'thread.run', 'thread.update', 'thread.delete'];
  const dir = workdir('fake', { threadAccess: { principals: [
    { name: 'a', tokenEnv: 'MCP_TOKEN_A', operations: ops },
    { name: 'b', tokenEnv: 'MCP_TOKEN_B', operations: ['thread.read', 'thread.run'] }] } });
  const { url, stop } = await serve(dir, { MCP_TOKEN_A: TOKEN_A, MCP_TOKEN_B: TOKEN_B }, ['--mcp-lifecycle-tools']);
  const connect = async tok => {
    const c = new Client({ name: 'b4box-test', version: '0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`),
                    { requestInit: { headers: { Authorization: `Bearer ${tok}` } } }));
    return c;
  };
  try {
    const a = await connect(TOKEN_A), b = await connect(TOKEN_B);
    assert.equal((await a.listTools()).tools.length, 9);
    const made = await a.callTool({ name: 'createThread', arguments: { thread_id: 'la' } });
    assert.equal(made.isError, false, JSON.stringify(made));
    assert.equal((await a.callTool({ name: 'writeFile', arguments: { thread_id: 'la', path: 'f', content: 'x' } })).isError, false);
    const listed = await a.callTool({ name: 'listThreads', arguments: {} });
    assert.match(listed.content[0].text, /"la"/);
    assert.doesNotMatch((await b.callTool({ name: 'listThreads', arguments: {} })).content[0].text, /"la"/);
    const nocreate = await b.callTool({ name: 'createThread', arguments: { thread_id: 'lb' } });
    assert.equal(nocreate.isError, true, 'b lacks thread.create');
    const nodelete = await b.callTool({ name: 'deleteThread', arguments: { thread_id: 'la' } });
    assert.equal(nodelete.isError, true, "b may not delete a's thread");
    assert.equal((await a.callTool({ name: 'releaseThread', arguments: { thread_id: 'la' } })).isError, false);
    assert.equal((await a.callTool({ name: 'deleteThread', arguments: { thread_id: 'la' } })).isError, false);
    const again = await a.callTool({ name: 'readFile', arguments: { thread_id: 'la', path: 'f' } });
    assert.equal(again.isError, true, 'deleted');
    await a.close(); await b.close();
  } finally { await stop(); }
});

// The official conformance package's server scenarios that apply to a tools-only server
// (the others assume the "everything" server's tools, resources and prompts). Without
// threadAccess: the package sends no token; dns-rebinding-protection checks the Host guard.
test('conformance: server-initialize, ping, tools-list, dns-rebinding-protection', async () => {
  const { url, stop } = await serve(workdir('fake'));
  try {
    const cli = join(here, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
    for (const scenario of ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']) {
      const out = execFileSync(process.execPath, ['--import', join(here, 'node20-fs-glob.mjs'), cli, 'server',
                                                  '--url', `${url}/mcp`, '--scenario', scenario],
                               { encoding: 'utf8', timeout: 60000 });
      assert.match(out, /Passed: (\d+)\/\1, 0 failed/, `${scenario}:\n${out}`);
    }
  } finally { await stop(); }
});
