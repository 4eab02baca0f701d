// Shared by the openapi tests: the document, the route table parsed from the C source, and
// an ajv instance that resolves the document's $refs.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const SRCDIR = process.env.B4BOX_SRCDIR ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DOC_PATH = join(SRCDIR, 'docs', 'openapi.json');
export const doc = JSON.parse(readFileSync(DOC_PATH, 'utf8'));

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

// "/threads/{id}/fs/{op}" -> "/threads/{}/fs/{}": the route table's pattern form.
export const normalize = (path) => path.replace(/\{[^}]*\}/g, '{}');

// Every operation of the document: {method, path, pattern, op}.
export function operations() {
        const out = [];
        for (const [path, item] of Object.entries(doc.paths))
                for (const m of METHODS)
                        if (item[m]) out.push({ method: m.toUpperCase(), path, pattern: normalize(path), op: item[m] });
        return out;
}

// The route table of src/server/routes.c: each top-level `{ ... }` initialiser of
// server_routes[] (braces inside strings and comments are skipped), read for .method,
// .pattern, .name and .op. An entry the parser cannot read fails loudly rather than dropping
// a route, and the entries must be as many as the table's .handler members.
export function routeTable() {
        const src = readFileSync(join(SRCDIR, 'src', 'server', 'routes.c'), 'utf8');
        const start = src.indexOf('server_routes[] = {');
        if (start < 0) throw new Error('routes.c: no server_routes[] table');
        const entries = [];
        let depth = 0, from = -1, i = src.indexOf('{', start) + 1;
        for (; i < src.length; i++) {
                const c = src[i];
                if (c === '"') { i = src.indexOf('"', i + 1); continue; } // patterns hold "{}"
                if (c === '/' && src[i + 1] === '*') { i = src.indexOf('*/', i) + 1; continue; }
                if (c === '/' && src[i + 1] === '/') { i = src.indexOf('\n', i); continue; }
                if (c === '{' && depth++ === 0) from = i;
                else if (c === '}' && depth === 0) break; // the table's own closing brace
                else if (c === '}' && --depth === 0) entries.push(src.slice(from, i + 1));
        }
        const handlers = (src.slice(start, i).match(/\.handler\s*=/g) ?? []).length;
        if (handlers !== entries.length) throw new Error(`routes.c: ${entries.length} entries read, ${handlers} handlers`);
        return entries.map((text) => {
                const get = (k) => {
                        const m = text.match(new RegExp('\\.' + k + '\\s*=\\s*"([^"]*)"'));
                        if (!m) throw new Error(`routes.c: an entry without .${k}: ${text.slice(0, 120)}`);
                        return m[1];
                };
                const op = text.match(/\.op\s*=\s*([A-Z0-9_]+)/);
                return { method: get('method'), pattern: get('pattern'), name: get('name'), op: opName(op && op[1]) };
        });
}

// B4_OP_THREAD_CREATE -> "thread.create", B4_OP_SOURCE_PUT -> "workspace.source.put", the
// access policy's names (include/b4box/config.h); ROUTE_OP_ANY -> "any", none -> "none".
function opName(c) {
        if (!c) return 'none';
        if (c === 'ROUTE_OP_ANY') return 'any';
        const m = c.match(/^B4_OP_(THREAD|SOURCE)_([A-Z]+)$/);
        if (!m) throw new Error(`routes.c: an operation the test cannot name: ${c}`);
        return (m[1] === 'SOURCE' ? 'workspace.source.' : 'thread.') + m[2].toLowerCase();
}

// An ajv that knows the whole document as "b4box:openapi", so "#/components/..." refs in a
// fragment resolve as "b4box:openapi#/components/...".
export function makeAjv() {
        const ajv = new Ajv2020({ strict: false, allErrors: true });
        addFormats(ajv);
        ajv.addKeyword('x-b4box-event-schema');
        ajv.addSchema(doc, 'b4box:openapi');
        return ajv;
}

const compiled = new Map();
// Validate @value against the schema at JSON pointer @pointer ("#/components/schemas/Thread"
// or a path inside paths); returns the errors (none: []).
export function validateAt(ajv, pointer, value) {
        let v = compiled.get(pointer);
        if (!v) {
                v = ajv.compile({ $ref: 'b4box:openapi' + pointer });
                compiled.set(pointer, v);
        }
        return v(value) ? [] : v.errors;
}

// "#/a/b~1c" -> the pointer escaping of one path segment
export const esc = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');
