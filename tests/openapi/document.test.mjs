// docs/openapi.json is a valid OpenAPI 3.1 document, matches the route table of
// src/server/routes.c both ways, and docs/http-api.md's route table lists the same routes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { doc, DOC_PATH, SRCDIR, operations, routeTable, makeAjv } from './lib.mjs';

test('the document validates as OpenAPI 3.1', async () => {
        assert.equal(doc.openapi, '3.1.0');
        const v = new Validator();
        const r = await v.validate(DOC_PATH);
        assert.equal(v.version, '3.1');
        assert.ok(r.valid, JSON.stringify(r.errors, null, 1));
});

test('every schema compiles under JSON Schema 2020-12', () => {
        const ajv = makeAjv();
        for (const name of Object.keys(doc.components.schemas))
                assert.doesNotThrow(() => ajv.compile({ $ref: 'b4box:openapi#/components/schemas/' + name }), name);
});

test('every route of routes.c is documented, and nothing else is', () => {
        const routes = routeTable();
        assert.ok(routes.length >= 30, `only ${routes.length} routes parsed from routes.c`);
        const documented = new Map(operations().map((o) => [`${o.method} ${o.pattern}`, o]));
        const missing = routes.filter((r) => !documented.has(`${r.method} ${r.pattern}`));
        assert.deepEqual(missing.map((r) => `${r.method} ${r.pattern} (${r.name})`), [],
                'routes without an operation in docs/openapi.json');
        const table = new Set(routes.map((r) => `${r.method} ${r.pattern}`));
        const extra = [...documented.keys()].filter((k) => !table.has(k));
        assert.deepEqual(extra, [], 'operations in docs/openapi.json that routes.c does not serve');
        for (const r of routes) {
                const o = documented.get(`${r.method} ${r.pattern}`).op;
                assert.equal(o['x-b4box-route'], r.name, `${r.method} ${r.pattern}: x-b4box-route`);
                const documentedOp = o['x-b4box-operation'] === 'any authenticated principal' ? 'any' : o['x-b4box-operation'];
                assert.equal(documentedOp, r.op, `${r.method} ${r.pattern}: x-b4box-operation`);
                assert.equal(r.op === 'none', Array.isArray(o.security) && o.security.length === 0,
                        `${r.method} ${r.pattern}: only a route without an operation needs no token`);
        }
});

test('operation ids are unique and every operation documents its refusals', () => {
        const ids = new Set();
        for (const { method, path, op } of operations()) {
                assert.ok(op.operationId && !ids.has(op.operationId), `${method} ${path}: operationId`);
                ids.add(op.operationId);
                const statuses = Object.keys(op.responses);
                assert.ok(statuses.some((s) => s.startsWith('2')), `${method} ${path}: no 2xx`);
                // statuses whose body is a JSON-RPC error (POST /mcp), not an Error, are named
                const rpc = op['x-b4box-jsonrpc-errors'] ?? [];
                for (const s of statuses.filter((x) => x >= '400' && !rpc.includes(x))) {
                        assert.equal(op.responses[s].$ref, `#/components/responses/Refusal${s}`, `${method} ${path} ${s}`);
                        const codes = op['x-b4box-refusals']?.[s];
                        assert.ok(Array.isArray(codes) && codes.length, `${method} ${path} ${s}: x-b4box-refusals`);
                        const all = doc.components.responses[`Refusal${s}`].content['application/json'].schema
                                .allOf[1].properties.error.properties.details.properties.code.enum;
                        for (const c of codes) assert.ok(all.includes(c), `${method} ${path} ${s} ${c} not in Refusal${s}`);
                }
        }
});

// docs/http-api.md's "Routes" table: `METHOD /path` cells; `{a,b}` groups expand; {id}-style
// names compare as {}.
function markdownRoutes() {
        const md = readFileSync(join(SRCDIR, 'docs', 'http-api.md'), 'utf8');
        const sec = md.slice(md.indexOf('\n## Routes\n'));
        const table = sec.slice(0, sec.indexOf('\n\n', sec.indexOf('| --- |')));
        const out = [];
        for (const line of table.split('\n')) {
                const m = line.match(/^\| `(GET|POST|PUT|DELETE) ([^`]+)`/);
                if (!m) continue;
                const alt = m[2].match(/^(.*)\{([^}]*,[^}]*)\}(.*)$/);
                const paths = alt ? alt[2].split(',').map((x) => alt[1] + x + alt[3]) : [m[2]];
                for (const p of paths) out.push(`${m[1]} ${p.replace(/\{[^}]*\}/g, '{}')}`);
        }
        return out;
}

test('docs/http-api.md lists every documented route, and only those', () => {
        const md = markdownRoutes();
        assert.ok(md.length >= 30, `only ${md.length} rows read from http-api.md`);
        const opsSet = new Set(operations().map((o) => `${o.method} ${o.pattern}`));
        // the fs reads are one templated route in the document and one row of six ops in the markdown
        const fsReads = ['stat', 'lstat', 'realPath', 'list', 'walk', 'read'].map((op) => `POST /threads/{}/fs/${op}`);
        const norm = (k) => (fsReads.includes(k) ? 'POST /threads/{}/fs/{}' : k);
        const mdSet = new Set(md.map(norm));
        assert.deepEqual([...opsSet].filter((k) => !mdSet.has(k)), [], 'in docs/openapi.json, not in http-api.md');
        assert.deepEqual([...mdSet].filter((k) => !opsSet.has(k)), [], 'in http-api.md, not in docs/openapi.json');
});

test('every refusal code the docs tables name is in the document with that status', () => {
        const enums = {};
        for (const [k, v] of Object.entries(doc.components.responses))
                enums[k.slice('Refusal'.length)] = v.content['application/json'].schema.allOf[1]
                        .properties.error.properties.details.properties.code.enum;
        const missing = [];
        let rows = 0;
        for (const f of ['http-api.md', 'inspect.md', 'workspaces.md']) {
                for (const line of readFileSync(join(SRCDIR, 'docs', f), 'utf8').split('\n')) {
                        // "| 409 | `a`, `b` | ..." (http-api.md) or "| outcome | 409 | `a` |" (inspect.md)
                        const m = line.match(/^\| (?:[^|]* \| )?(\d{3}) \| ((?:`[a-z_0-9]+`(?:, )?)+) \|/);
                        if (!m) continue;
                        rows++;
                        for (const [, c] of m[2].matchAll(/`([a-z_0-9]+)`/g))
                                if (m[1] !== '405' && !(enums[m[1]] ?? []).includes(c)) missing.push(`${f}: ${m[1]} ${c}`);
                }
        }
        assert.ok(rows >= 40, `only ${rows} refusal rows read`);
        assert.deepEqual(missing, [], 'documented refusals that docs/openapi.json does not list');
});
