// A live `b4box serve` (fake provider) driven through real 2xx and refusal answers of every
// operation of docs/openapi.json; every answer is checked against the document: its status
// must be one the operation documents (an unknown status fails), its body must match the
// schema for that status and content type, a refusal's code must be one the operation lists
// in x-b4box-refusals, and a streamed answer's every event must match x-b4box-event-schema;
// a request body the server took must match the operation's request schema.
// At the end every operation must have been seen with a 2xx and with a refusal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { doc, operations, makeAjv, validateAt, esc } from './lib.mjs';
import { startServer, request } from './server.mjs';

const ajv = makeAjv();
const seen = new Map(); // "METHOD path" -> Set of statuses
const ADMIN = 'admin-token-0123456789';
const READER = 'reader-token-0123456789';
const ALL_OPS = ['thread.create', 'thread.read', 'thread.update', 'thread.delete', 'thread.run',
        'thread.workspace', 'workspace.source.put', 'thread.approve', 'workspace.source.read',
        'workspace.source.delete'];
let A; // threadAccess, staged workspaces, workspace reads, interactive permissions
let B; // TCP, no threadAccess, no options: the browser checks and the options-off refusals

// The document's operation for a request path: a concrete path before a templated one.
function findOp(method, rawPath) {
        const path = rawPath.split('?')[0].split('/').map((s) => decodeURIComponent(s));
        let best = null;
        for (const o of operations()) {
                if (o.method !== method) continue;
                const segs = o.path.split('/');
                if (segs.length !== path.length) continue;
                let ok = true, templated = 0;
                for (let i = 0; ok && i < segs.length; i++)
                        if (segs[i].startsWith('{')) templated++;
                        else ok = segs[i] === path[i];
                if (ok && (!best || templated < best.templated)) best = { ...o, templated };
        }
        return best;
}

function parseEvents(ctype, text) {
        if (ctype.startsWith('application/x-ndjson'))
                return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
        const out = [];
        for (const frame of text.split('\n\n')) {
                const ev = {};
                for (const line of frame.split('\n')) {
                        if (!line || line.startsWith(':')) continue;
                        const i = line.indexOf(':');
                        const k = line.slice(0, i), v = line.slice(i + 1).replace(/^ /, '');
                        if (k === 'event') ev.event = v;
                        else if (k === 'id') ev.id = Number(v);
                        else if (k === 'data') ev.data = JSON.parse(v);
                }
                if (ev.event) out.push(ev);
        }
        return out;
}

// Send, then check the answer against the document; returns {status, headers, body, json, events}.
async function call(server, method, path, opts = {}) {
        const res = await request(server.target, method, path, { token: ADMIN, ...opts });
        const where = `${method} ${path} -> ${res.status}`;
        const o = findOp(method, path);
        assert.ok(o, `${where}: no operation in the document`);
        const key = `${o.method} ${o.path}`;
        if (!seen.has(key)) seen.set(key, new Set());
        seen.get(key).add(res.status);
        // what the server took, the document's request schema must take too
        const rb = o.op.requestBody?.content?.['application/json'];
        if (res.status < 300 && rb && opts.body !== undefined) {
                const sent = typeof opts.body === 'string' ? JSON.parse(opts.body) : opts.body;
                const ptr = `#/paths/${esc(o.path)}/${method.toLowerCase()}/requestBody/content/application~1json/schema`;
                assert.deepEqual(validateAt(ajv, ptr, sent), [], `${where}: the request schema refuses a body the server took`);
        }
        let resp = o.op.responses[String(res.status)];
        assert.ok(resp, `${where}: status not documented for ${key} (${res.body.toString().slice(0, 200)})`);
        let base = `#/paths/${esc(o.path)}/${method.toLowerCase()}/responses/${res.status}`;
        if (resp.$ref) {
                base = resp.$ref;
                resp = resp.$ref.split('/').slice(1).reduce((v, k) => v[k], doc);
        }
        const ctype = (res.headers['content-type'] ?? '').split(';')[0].trim();
        if (res.status === 204 || (res.status === 202 && !resp.content)) { // no content: none documented, none sent
                assert.ok(!resp.content && res.body.length === 0, `${where}: a 204 has no body`);
                return { ...res, text: '' };
        }
        assert.ok(resp.content?.[ctype], `${where}: content type '${ctype}' not documented`);
        const media = resp.content[ctype];
        const out = { ...res, text: res.body.toString() };
        if (ctype === 'application/json') {
                assert.ok(out.text.endsWith('\n'), `${where}: a JSON body ends with a newline`);
                out.json = JSON.parse(out.text);
                const errs = validateAt(ajv, `${base}/content/application~1json/schema`, out.json);
                assert.deepEqual(errs, [], `${where}: body does not match the schema: ${out.text.slice(0, 300)}`);
                if (res.status >= 400 && out.json.error?.details?.code) {
                        const codes = o.op['x-b4box-refusals'][String(res.status)];
                        assert.ok(codes.includes(out.json.error.details.code),
                                `${where}: code ${out.json.error.details.code} not in x-b4box-refusals ${codes}`);
                }
        } else if (media['x-b4box-event-schema']) {
                out.events = parseEvents(ctype, out.text);
                assert.ok(out.events.length > 0, `${where}: an empty stream`);
                const ptr = media['x-b4box-event-schema'].$ref;
                for (const ev of out.events)
                        assert.deepEqual(validateAt(ajv, ptr, ev), [], `${where}: event ${JSON.stringify(ev)}`);
        }
        return out;
}

const expect = (r, status, code) => {
        assert.equal(r.status, status, r.text.slice(0, 300));
        if (code) assert.equal(r.json.error.details.code, code);
        return r;
};

function bundle(files) {
        const list = Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
                .map(([path, text]) => ({ path, base64: Buffer.from(text).toString('base64'), executable: false }));
        const digest = createHash('sha256')
                .update(JSON.stringify(['b4-workspace-source-v1', list.map((f) => [f.path, f.base64, f.executable])]))
                .digest('hex');
        return { digest, text: JSON.stringify({ version: 1, digest, files: list }) };
}

before(async () => {
        const resolver = '#!/usr/bin/python3\nimport json, sys\nd = json.load(sys.stdin)\n' +
                'print(json.dumps({"workspace": d["staged"] or {"source": {"directory": "empty", "include": []}}}))\n';
        A = await startServer({
                files: { 'admin.token': { text: ADMIN + '\n' }, 'reader.token': { text: READER + '\n' },
                        'resolve.py': { text: resolver, mode: 0o755 } },
                env: { B4BOX_FAKE_READ_DELAY_MS: '1200' },
                config: (dir) => {
                        require_dir(dir + '/empty');
                        return {
                                sandbox: { provider: { type: 'fake', scope: 'oapi-a-' + process.pid },
                                        thread: { command: [dir + '/resolve.py'] }, stagedWorkspaces: true,
                                        workspaceRead: 'http' },
                                permissions: { mode: 'interactive', allow: { bash: ['echo', 'printf', 'exit', 'true', 'false'] } },
                                threadAccess: { principals: [
                                        { name: 'admin', tokenFile: dir + '/admin.token', operations: ALL_OPS, threads: 'all' },
                                        { name: 'reader', tokenFile: dir + '/reader.token', operations: ['thread.read'], threads: 'all' }] },
                        };
                },
        });
        B = await startServer({ tcp: true, config: { sandbox: { provider: { type: 'fake', scope: 'oapi-b-' + process.pid } },
                permissions: { mode: 'bypass' } } });
});
after(async () => { await A?.stop(); await B?.stop(); });

import { mkdirSync } from 'node:fs';
function require_dir(p) { mkdirSync(p, { recursive: true }); }

test('meta: healthz, metrics, the document itself', async () => {
        expect(await call(A, 'GET', '/healthz', { token: undefined }), 200);
        const m = expect(await call(A, 'GET', '/metrics'), 200);
        assert.match(m.text, /b4box_build_info/);
        const u = expect(await call(A, 'GET', '/metrics', { token: undefined }), 401, 'unauthorized');
        assert.equal(u.headers['www-authenticate'], 'Bearer');
        const d = expect(await call(A, 'GET', '/openapi.json', { token: READER }), 200);
        assert.deepEqual(d.json, doc, 'GET /openapi.json serves docs/openapi.json');
        expect(await call(A, 'GET', '/openapi.json', { token: 'nope-nope-nope-nope' }), 401, 'unauthorized');
        const host = { headers: { Host: 'evil.example' } };
        expect(await call(B, 'GET', '/healthz', host), 421, 'host_not_allowed');
        expect(await call(B, 'GET', '/healthz', { headers: { Origin: 'http://evil.example' } }), 403, 'origin_not_allowed');
});

test('threads: create, read, list, refusals', async () => {
        const t = expect(await call(A, 'POST', '/threads', { body: { thread_id: 'o1', metadata: { job: 1 } } }), 201);
        assert.equal(t.json.thread_id, 'o1');
        expect(await call(A, 'POST', '/threads', { body: { thread_id: 'o1' } }), 409, 'thread_exists');
        expect(await call(A, 'POST', '/threads', { body: { thread_id: 7 } }), 400, 'invalid_request');
        expect(await call(A, 'POST', '/threads', { body: { bogus: 1 } }), 400, 'invalid_request');
        expect(await call(A, 'POST', '/threads', { body: { thread_id: 'x' }, token: READER }), 403, 'forbidden');
        expect(await call(A, 'POST', '/threads', { body: { parent_thread_id: 'none' } }), 404, 'thread_not_found');
        expect(await call(A, 'POST', '/threads', { body: {} }), 201);
        expect(await call(B, 'POST', '/threads', { body: 'x', headers: { 'Content-Type': 'text/plain' } }), 415, 'unsupported_media_type');
        expect(await call(B, 'POST', '/threads', { body: ' '.repeat(1100000) }), 413, 'payload_too_large');
        expect(await call(B, 'POST', '/threads', { body: { workspace: { sourceDigest: 'a'.repeat(64) } } }), 400, 'workspace_not_accepted');
        const l = expect(await call(A, 'GET', '/threads', { token: READER }), 200);
        assert.ok(l.json.threads.some((x) => x.thread_id === 'o1'));
        expect(await call(A, 'GET', '/threads', { token: undefined }), 401, 'unauthorized');
        expect(await call(A, 'GET', '/threads/o1'), 200);
        expect(await call(A, 'GET', '/threads/missing'), 404, 'thread_not_found');
        expect(await call(A, 'GET', '/threads/o1/check'), 200);
        expect(await call(A, 'GET', '/threads/missing/check'), 404, 'thread_not_found');
        expect(await call(A, 'GET', '/threads/o1/network'), 200);
        expect(await call(A, 'GET', '/threads/missing/network'), 404, 'thread_not_found');
        expect(await call(A, 'GET', '/threads/o1/network', { token: undefined }), 401, 'unauthorized');
});

test('tools and runs: plain, streamed (NDJSON and SSE), refusals', async () => {
        await call(A, 'POST', '/threads', { body: { thread_id: 'o2' } });
        const r = expect(await call(A, 'POST', '/threads/o2/tools/runBash', { body: { command: 'exit 3' } }), 200);
        assert.equal(r.json.ok, true);
        assert.equal(r.json.result.exitCode, 3);
        const f = expect(await call(A, 'POST', '/threads/o2/tools/readFile', { body: { path: 'nope' } }), 200);
        assert.equal(f.json.ok, false);
        expect(await call(A, 'POST', '/threads/o2/tools/writeFile', { body: { path: 'a.txt', content: 'a\n' } }), 200);
        expect(await call(A, 'POST', '/threads/o2/tools/listDir', { body: {} }), 200);
        expect(await call(A, 'POST', '/threads/o2/tools/nope', { body: {} }), 200);
        for (const accept of ['application/x-ndjson', 'text/event-stream']) {
                const s = expect(await call(A, 'POST', '/threads/o2/tools/runBash',
                        { body: { command: 'echo streamed' }, headers: { Accept: accept } }), 200);
                assert.ok(s.events.some((e) => e.event === 'stdout' && e.data.text === 'streamed\n'), s.text);
                assert.equal(s.events.at(-1).event, 'exit');
                const rs = expect(await call(A, 'POST', '/threads/o2/runs',
                        { body: { calls: [{ tool: 'runBash', args: { command: 'echo one' } }, { tool: 'listDir' }] },
                                headers: { Accept: accept } }), 200);
                assert.equal(rs.events.at(-1).data.results.length, 2);
        }
        expect(await call(A, 'POST', '/threads/o2/tools/runBash', { body: { command: 5 }, headers: { Accept: 'application/x-ndjson' } }),
                400, 'invalid_arguments');
        const runs = expect(await call(A, 'POST', '/threads/o2/runs',
                { body: { calls: [{ tool: 'writeFile', args: { path: 'b.txt', content: 'b' } }, { tool: 'readFile', args: { path: 'b.txt' } }] } }), 200);
        assert.equal(runs.json.results[1].result, 'b');
        expect(await call(A, 'POST', '/threads/o2/runs', { body: { calls: [] } }), 400, 'invalid_request');
        expect(await call(A, 'POST', '/threads/o2/runs', { body: { calls: [{ tool: 'listDir' }] }, token: READER }), 403, 'forbidden');
        expect(await call(A, 'POST', '/threads/missing/tools/listDir', { body: {} }), 404, 'thread_not_found');
});

test('permissions: a parked call answered, an unknown interrupt', async () => {
        await call(A, 'POST', '/threads', { body: { thread_id: 'o3' } });
        const p = expect(await call(A, 'POST', '/threads/o3/tools/readFile', { body: { path: '/etc/hostname' } }), 200);
        assert.equal(p.json.error.code, 'permission_required', p.text);
        const id = p.json.permissionRequest.interruptId;
        const a = expect(await call(A, 'POST', '/threads/o3/permissions', { body: { interruptId: id, decision: 'deny' } }), 200);
        assert.equal(a.json.ok, false);
        expect(await call(A, 'POST', '/threads/o3/permissions', { body: { interruptId: id, decision: 'deny' } }), 404, 'interrupt_not_found');
        expect(await call(A, 'POST', '/threads/o3/permissions', { body: { interruptId: 1 } }), 400, 'invalid_request');
});

test('filesystem: every op, and its refusals', async () => {
        await call(A, 'POST', '/threads', { body: { thread_id: 'o4' } });
        const fs = (op, body, opts = {}) => call(A, 'POST', `/threads/o4/fs/${op}`, { body, ...opts });
        expect(await fs('write', { path: 'd/f.txt', content: 'hello\n' }), 200);
        expect(await fs('write', { path: 'd/g.bin', content: '/w==', encoding: 'base64' }), 200);
        expect(await fs('mkdir', { path: 'e' }), 200);
        expect(await fs('touch', { path: 'e/t' }), 200);
        expect(await fs('remove', { path: 'e/t' }), 200);
        for (const op of ['stat', 'lstat', 'realPath']) expect(await fs(op, { path: 'd/f.txt' }), 200);
        expect(await fs('list', { path: 'd' }), 200);
        expect(await fs('walk', { path: '.' }), 200);
        const rd = expect(await fs('read', { path: 'd/f.txt', offset: 1, length: 3 }), 200);
        assert.equal(rd.json.content, 'ell');
        expect(await fs('read', { path: 'd/g.bin' }), 422, 'not_utf8');
        expect(await fs('read', { path: 'missing' }), 404, 'not_found');
        expect(await fs('remove', { path: 'd' }), 409, 'not_empty');
        expect(await fs('frobnicate', { path: 'x' }), 404, 'unknown_fs_op');
        expect(await fs('stat', { path: '' }), 400, 'invalid_path');
        expect(await fs('stat', { path: 'x', extra: 1 }), 400, 'invalid_request');
        expect(await fs('stat', { path: 'x' }, { token: READER }), 404, 'thread_not_found');
        for (const op of ['write', 'mkdir', 'remove', 'touch'])
                expect(await fs(op, { path: 'x', content: '' }, { token: READER }), 403, 'forbidden');
});

test('background processes: start, list, read, logs (bytes and streams), stdin, signal, wait, delete', async () => {
        await call(A, 'POST', '/threads', { body: { thread_id: 'o5' } });
        const P = '/threads/o5/processes';
        const s = expect(await call(A, 'POST', P, { body: { command: 'echo bg', tag: 'one' } }), 201);
        const pid = s.json.pid;
        const s2 = expect(await call(A, 'POST', P, { body: { command: 'echo in', stdin: true } }), 201);
        expect(await call(A, 'POST', P, { body: { command: '' } }), 400, 'invalid_request');
        expect(await call(A, 'POST', P, { body: { command: 'echo x' }, token: READER }), 403, 'forbidden');
        expect(await call(A, 'GET', P), 200);
        expect(await call(A, 'GET', '/threads/missing/processes'), 404, 'thread_not_found');
        expect(await call(A, 'GET', `${P}/${pid}`), 200);
        expect(await call(A, 'GET', `${P}/999`), 404, 'process_not_found');
        expect(await call(A, 'POST', `${P}/${pid}/wait?timeoutMs=5000`), 200);
        expect(await call(A, 'POST', `${P}/999/wait`), 404, 'process_not_found');
        const raw = expect(await call(A, 'GET', `${P}/${pid}/logs`), 200);
        assert.equal(raw.headers['x-b4box-process-state'], 'exited');
        for (const accept of ['application/x-ndjson', 'text/event-stream']) {
                const l = expect(await call(A, 'GET', `${P}/${pid}/logs?from=0&follow=1`, { headers: { Accept: accept } }), 200);
                assert.equal(l.events.at(-1).event, 'exit');
        }
        expect(await call(A, 'GET', `${P}/${pid}/logs?follow=1`), 400, 'invalid_request');
        expect(await call(A, 'GET', `${P}/999/logs`), 404, 'process_not_found');
        const st = await call(A, 'POST', `${P}/${s2.json.pid}/stdin`, { body: { text: 'a\n', eof: true } });
        assert.ok([200, 409].includes(st.status), st.text); // the fake's command may have exited
        expect(await call(A, 'POST', `${P}/${pid}/stdin`, { body: { text: 'a' } }), 409, 'stdin_closed');
        expect(await call(A, 'POST', `${P}/${pid}/signal`, { body: { signal: 'TERM' } }), 200);
        expect(await call(A, 'POST', `${P}/${pid}/signal`, { body: { signal: 'NOPE' } }), 400, 'invalid_request');
        expect(await call(A, 'DELETE', `${P}/${pid}`), 200);
        expect(await call(A, 'DELETE', `${P}/${pid}`), 404, 'process_not_found');
});

test('staged sources and a thread created from one; workspace inspection', async () => {
        const b = bundle({ 'src/main.txt': 'hello\n', 'README.md': '# x\n' });
        const put = (d, body, opts) => call(A, 'PUT', `/workspace/sources/${d}`, { body, ...opts });
        expect(await put(b.digest, b.text), 201);
        assert.equal((await put(b.digest, b.text)).json.status, 'held');
        expect(await put('nothex', b.text), 400, 'invalid_digest');
        expect(await put('0'.repeat(64), b.text), 400, 'digest_mismatch');
        expect(await put(b.digest, b.text, { token: READER }), 403, 'forbidden');
        expect(await call(B, 'PUT', `/workspace/sources/${b.digest}`, { body: b.text }), 404, 'not_found');
        const ls = expect(await call(A, 'GET', '/workspace/sources'), 200);
        assert.ok(ls.json.sources.some((s) => s.digest === b.digest));
        expect(await call(B, 'GET', '/workspace/sources'), 404, 'not_found');
        expect(await call(A, 'GET', `/workspace/sources/${b.digest}`), 200);
        expect(await call(A, 'GET', `/workspace/sources/${'1'.repeat(64)}`), 404, 'source_not_found');
        expect(await call(A, 'POST', '/threads', { body: { thread_id: 'o6', workspace: { sourceDigest: '2'.repeat(64) } } }),
                422, 'workspace_source_not_held');
        const t = expect(await call(A, 'POST', '/threads', { body: { thread_id: 'o6', workspace: { sourceDigest: b.digest } } }), 201);
        assert.equal(t.json.workspace.sourceDigest, b.digest);
        expect(await call(A, 'DELETE', `/workspace/sources/${b.digest}`), 409, 'source_in_use');
        expect(await call(A, 'POST', '/threads/o6/workspace/inspect', { body: {} }), 404, 'workspace_not_found');
        const rd = expect(await call(A, 'POST', '/threads/o6/tools/readFile', { body: { path: 'src/main.txt' } }), 200);
        assert.equal(rd.json.result, 'hello\n');
        const insp = expect(await call(A, 'POST', '/threads/o6/workspace/inspect', { body: { excludeRootDirectories: ['.git'] } }), 200);
        assert.equal(insp.json.inspection.files['src/main.txt'], 'hello\n');
        assert.equal(insp.json.sourceDigest, b.digest);
        expect(await call(A, 'POST', '/threads/o6/workspace/inspect', { body: { bogus: 1 } }), 400, 'invalid_request');
        expect(await call(A, 'POST', '/threads/o6/workspace/inspect', { body: {}, token: READER }), 404, 'thread_not_found');
        // a read holds the run slot: a run meanwhile is 409, a cancel is 202 and the read 409 read_cancelled
        const reading = call(A, 'POST', '/threads/o6/workspace/inspect', { body: {} });
        await new Promise((r) => setTimeout(r, 300));
        const busy = expect(await call(A, 'POST', '/threads/o6/tools/listDir', { body: {} }), 409, 'run_in_flight');
        assert.equal(busy.headers['retry-after'], '1');
        expect(await call(A, 'POST', '/threads/o6/cancel'), 202);
        expect(await reading, 409, 'read_cancelled');
        expect(await call(A, 'POST', '/threads/o6/cancel'), 409, 'no_run_in_flight');
        await call(B, 'POST', '/threads', { body: { thread_id: 'b1' } });
        const bare = await call(B, 'POST', '/threads/b1/workspace/inspect', { body: {} });
        assert.equal(bare.status, 404);
        assert.equal(bare.text, '{"error":{"message":"Not found"}}\n');
        expect(await call(A, 'DELETE', '/threads/o6'), 200);
        expect(await call(A, 'DELETE', `/workspace/sources/${b.digest}`), 200);
        expect(await call(A, 'DELETE', `/workspace/sources/${b.digest}`), 404, 'source_not_found');
});

test('readers: open, read through one, close, refusals', async () => {
        await call(A, 'POST', '/threads', { body: { thread_id: 'o8' } });
        expect(await call(A, 'POST', '/threads/o8/readers'), 404, 'workspace_not_found');
        await call(A, 'POST', '/threads/o8/fs/write', { body: { path: 'a.txt', content: 'hi\n' } });
        const o = expect(await call(A, 'POST', '/threads/o8/readers', { body: { idleTimeoutMs: 5000 } }), 201);
        const rid = o.json.readerId;
        expect(await call(A, 'POST', '/threads/o8/readers', { body: { idleTimeoutMs: 1 } }), 400, 'invalid_request');
        const r = expect(await call(A, 'POST', `/threads/o8/readers/${rid}/fs/read`, { body: { path: 'a.txt' } }), 200);
        assert.equal(r.json.content, 'hi\n');
        expect(await call(A, 'POST', `/threads/o8/readers/${rid}/fs/stat`, { body: { path: 'a.txt' } }), 200);
        expect(await call(A, 'POST', `/threads/o8/readers/${rid}/fs/write`, { body: { path: 'a.txt', content: 'x' } }),
                404, 'unknown_fs_op');
        expect(await call(A, 'POST', `/threads/o8/readers/${'0'.repeat(32)}/fs/stat`, { body: { path: '.' } }),
                404, 'reader_not_found');
        expect(await call(A, 'POST', '/threads/o8/readers', { token: READER }), 404, 'thread_not_found');
        expect(await call(A, 'DELETE', `/threads/o8/readers/${rid}`), 204);
        expect(await call(A, 'DELETE', `/threads/o8/readers/${rid}`), 404, 'reader_not_found');
        expect(await call(A, 'DELETE', '/threads/o8'), 200);
});

test('mcp: initialize, tools, a tool failure, JSON-RPC refusals', async () => {
        const mcp = (body, opts = {}) => call(A, 'POST', '/mcp', {
                body, ...opts, headers: { Accept: 'application/json, text/event-stream', ...(opts.headers ?? {}) } });
        const init = expect(await mcp({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
                protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'oapi', version: '1' } } }), 200);
        assert.equal(init.json.result.protocolVersion, '2025-11-25');
        assert.ok(init.headers['mcp-session-id'], 'initialize answers an Mcp-Session-Id');
        const session = { 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25' };
        expect(await mcp({ jsonrpc: '2.0', method: 'notifications/initialized' }, { headers: session }), 202);
        const list = expect(await mcp({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { headers: session }), 200);
        assert.deepEqual(list.json.result.tools.map((t) => t.name).sort(),
                ['editFile', 'listDir', 'readFile', 'runBash', 'writeFile']);
        expect(await call(A, 'POST', '/threads', { body: { thread_id: 'om1' } }), 201);
        const miss = expect(await mcp({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: {
                name: 'readFile', arguments: { thread_id: 'om1', path: 'no-such-file' } } }, { headers: session }), 200);
        assert.equal(miss.json.result.isError, true);
        const bad = expect(await mcp('{"jsonrpc": "2.0", "id": 4, ', { headers: session }), 400);
        assert.equal(bad.json.error.code, -32700);
        const batch = expect(await mcp([{ jsonrpc: '2.0', id: 5, method: 'ping' }], { headers: session }), 400);
        assert.equal(batch.json.error.code, -32600);
        expect(await mcp({ jsonrpc: '2.0', id: 6, method: 'ping' }, { token: undefined }), 401, 'unauthorized');
        expect(await call(B, 'POST', '/mcp', { body: { jsonrpc: '2.0', id: 7, method: 'ping' },
                headers: { Origin: 'http://evil.example' } }), 403, 'origin_not_allowed');
});

test('lifecycle: pause, resume, release, delete', async () => {
        await call(A, 'POST', '/threads', { body: { thread_id: 'o7' } });
        expect(await call(A, 'POST', '/threads/o7/pause'), 409, 'thread_not_live');
        await call(A, 'POST', '/threads/o7/tools/runBash', { body: { command: 'true' } });
        expect(await call(A, 'POST', '/threads/o7/pause'), 200);
        expect(await call(A, 'POST', '/threads/o7/resume'), 200);
        expect(await call(A, 'POST', '/threads/o7/resume', { token: READER }), 403, 'forbidden');
        expect(await call(A, 'POST', '/threads/o7/release'), 200);
        expect(await call(A, 'POST', '/threads/missing/release'), 404, 'thread_not_found');
        expect(await call(A, 'DELETE', '/threads/o7', { token: READER }), 403, 'forbidden');
        expect(await call(A, 'DELETE', '/threads/o7'), 200);
        expect(await call(A, 'DELETE', '/threads/o7'), 404, 'thread_not_found');
});

test('every operation was answered with a 2xx and with a refusal', () => {
        const missing = [];
        for (const { method, path } of operations()) {
                const st = [...(seen.get(`${method} ${path}`) ?? [])];
                if (!st.some((s) => s < 300)) missing.push(`${method} ${path}: no 2xx`);
                if (!st.some((s) => s >= 400)) missing.push(`${method} ${path}: no refusal`);
        }
        assert.deepEqual(missing, []);
});
