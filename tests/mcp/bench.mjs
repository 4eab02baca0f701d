// Latency of MCP tool calls (not a test): node tests/mcp/bench.mjs [fake|native] [N]
// B4BOX=path/to/b4box. Prints the median and p90 of N sequential calls per transport.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = dirname(fileURLToPath(import.meta.url));
const B4BOX = process.env.B4BOX || join(here, '../../build-dbg/src/cli/b4box');
const provider = process.argv[2] || 'fake', N = Number(process.argv[3] || 50);
const dir = mkdtempSync(join(tmpdir(), 'b4box-mcp-bench-'));
writeFileSync(join(dir, 'b4box.json'), JSON.stringify({ sandbox: { provider: { type: provider, scope: 'mcpbench' } } }));

async function measure(label, c, args) {
  await c.callTool({ name: 'runBash', arguments: { ...args, command: 'true' } }); /* warm */
  const t = [];
  for (let i = 0; i < N; i++) {
    const t0 = process.hrtime.bigint();
    await c.callTool({ name: 'runBash', arguments: { ...args, command: 'true' } });
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(`${label} (${provider}, runBash "true", ${N} calls): median ${t[N >> 1].toFixed(2)} ms, p90 ${t[Math.floor(N * 0.9)].toFixed(2)} ms`);
}

const s = new Client({ name: 'bench', version: '0' });
await s.connect(new StdioClientTransport({ command: B4BOX, args: ['--state', join(dir, 'st'), 'mcp', '--thread', 'b'], cwd: dir, stderr: 'ignore' }));
await measure('stdio', s, {});
await s.close();
execFileSync(B4BOX, ['--state', join(dir, 'st'), 'destroy', 'b'], { cwd: dir, stdio: 'ignore' });

const srv = spawn(B4BOX, ['--state', join(dir, 'st2'), 'serve', '--listen', '127.0.0.1:0'], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
const url = await new Promise(resolve => {
  let log = '';
  srv.stderr.on('data', d => { log += d; const m = log.match(/address=(?:"?)(127\.0\.0\.1:\d+)/); if (m) resolve(`http://${m[1]}`); });
});
await fetch(`${url}/threads`, { method: 'POST', body: '{"thread_id":"b"}', headers: { 'Content-Type': 'application/json' } });
const h = new Client({ name: 'bench', version: '0' });
await h.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
await measure('http', h, { thread_id: 'b' });
await h.close();
await fetch(`${url}/threads/b`, { method: 'DELETE' });
srv.kill('SIGTERM');
await new Promise(r => srv.on('exit', r));
rmSync(dir, { recursive: true, force: true });
