// A real `b4box serve` for a test: started on a unix socket or 127.0.0.1:0 with a config of
// the test's, stopped with SIGTERM (by its own pid) and its directory removed.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';

export const B4BOX = process.env.B4BOX;

export async function startServer({ config, tcp = false, env = {}, files = {} }) {
        if (!B4BOX) throw new Error('B4BOX must name the b4box binary');
        const dir = mkdtempSync(join(tmpdir(), 'b4oapi.'));
        for (const [name, f] of Object.entries(files)) writeFileSync(join(dir, name), f.text, { mode: f.mode ?? 0o644 });
        const cfg = typeof config === 'function' ? config(dir) : config;
        writeFileSync(join(dir, 'b4box.json'), JSON.stringify(cfg));
        const sock = join(dir, 'sock');
        const listen = tcp ? '127.0.0.1:0' : 'unix:' + sock;
        const child = spawn(B4BOX, ['-c', join(dir, 'b4box.json'), '--state', join(dir, 'state'), 'serve', '--listen', listen],
                { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
        let log = '';
        const address = await new Promise((resolve, reject) => {
                const t = setTimeout(() => reject(new Error('server did not start:\n' + log)), 10000);
                child.stderr.on('data', (d) => {
                        log += d;
                        const m = log.match(/msg=serving address=(\S+)/);
                        if (m) { clearTimeout(t); resolve(m[1]); }
                });
                child.on('exit', (code) => { clearTimeout(t); reject(new Error(`server exited ${code}:\n${log}`)); });
        });
        child.removeAllListeners('exit');
        const target = address.startsWith('unix:') ? { socketPath: address.slice(5) }
                : { host: '127.0.0.1', port: Number(address.split(':').pop()) };
        return {
                dir, target, address, log: () => log,
                async stop() {
                        if (child.exitCode === null) {
                                const done = new Promise((r) => child.on('exit', r));
                                child.kill('SIGTERM');
                                await done;
                        }
                        rmSync(dir, { recursive: true, force: true });
                },
        };
}

// One request; resolves {status, headers, body: Buffer}. @body: an object (sent as JSON with
// Content-Type application/json), a string or Buffer (sent as is).
export function request(target, method, path, { body, headers = {}, token } = {}) {
        return new Promise((resolve, reject) => {
                const h = { ...headers };
                let data;
                if (body !== undefined) {
                        data = Buffer.isBuffer(body) || typeof body === 'string' ? Buffer.from(body) : Buffer.from(JSON.stringify(body));
                        if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
                        h['Content-Length'] = data.length;
                }
                if (token) h.Authorization = 'Bearer ' + token;
                const req = http.request({ ...target, method, path, headers: h }, (res) => {
                        const chunks = [];
                        res.on('data', (c) => chunks.push(c));
                        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
                        res.on('error', reject);
                });
                req.on('error', reject);
                req.end(data);
        });
}
