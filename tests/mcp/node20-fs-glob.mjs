// `node --import ./node20-fs-glob.mjs`: @modelcontextprotocol/conformance 0.1.16 imports
// fs.globSync (Node >= 22) for its results summary only; on Node 20 its `fs` is this module's
// shim (the fs module plus a globSync for "**/<name>" patterns). Nothing else is changed.
import { register } from 'node:module';
import * as fs from 'node:fs';
import { join, relative } from 'node:path';

export * from 'node:fs';
export default fs.default ?? fs;

export function globSync(pattern, { cwd = '.' } = {}) {
  const name = pattern.replace(/^\*\*\//, '');
  const out = [];
  const walk = d => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === name) out.push(relative(cwd, p));
    }
  };
  if (fs.existsSync(cwd)) walk(cwd);
  return out;
}

const self = import.meta.url;
if (!fs.globSync) {
  const hook = `data:text/javascript,${encodeURIComponent(`
    export async function resolve(s, c, next) {
      if ((s === 'fs' || s === 'node:fs') && c.parentURL && c.parentURL !== ${JSON.stringify(self)} &&
          c.parentURL.includes('/@modelcontextprotocol/conformance/'))
        return { url: ${JSON.stringify(self)}, shortCircuit: true };
      return next(s, c);
    }`)}`;
  register(hook);
}
