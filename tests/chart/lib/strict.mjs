// Strict validation of Kubernetes objects against the schemas of kubernetes-models (generated
// from the Kubernetes OpenAPI, compiled to AJV validators in kubernetes-models/_schemas).
// Those validators accept unknown fields (no additionalProperties: false), so this module adds
// what `kubeconform -strict` does: every object the validator is handed is wrapped in a Proxy
// that records which keys the validator reads. A compiled validator reads every property its
// schema declares (`data.name`) and every key of a map (`for (k in data)`), so a key it never
// reads is not in the schema: an unknown field, refused like the API server's
// fieldValidation=Strict would.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const modelsDir = path.dirname(require.resolve('kubernetes-models/package.json'));

// apiVersion + kind -> the compiled validator of that kind (read from the model's own import).
const cache = new Map();
async function validatorFor(apiVersion, kind) {
    const key = `${apiVersion}/${kind}`;
    if (cache.has(key)) return cache.get(key);
    let file;
    try {
        file = readFileSync(path.join(modelsDir, apiVersion, `${kind}.js`), 'utf8');
    } catch {
        throw new Error(`no schema for ${apiVersion} ${kind}`);
    }
    const m = /_schemas\/(\w+)\.js/.exec(file);
    if (!m) throw new Error(`no schema import in kubernetes-models/${apiVersion}/${kind}.js`);
    const mod = await import(`kubernetes-models/_schemas/${m[1]}`);
    cache.set(key, mod.validate);
    return mod.validate;
}

// Wrap plain objects and arrays so every read of an own key is recorded in `seen` (a Map from
// each wrapped object to the set of keys read, and to its JSON pointer).
function track(value, pointer, seen) {
    if (value === null || typeof value !== 'object') return value;
    const entry = { pointer, keys: new Set(), isArray: Array.isArray(value) };
    seen.set(value, entry);
    return new Proxy(value, {
        get(target, prop, receiver) {
            const v = Reflect.get(target, prop, receiver);
            if (typeof prop !== 'string' || !Object.hasOwn(target, prop)) return v;
            entry.keys.add(prop);
            return track(v, `${pointer}/${prop.replace(/~/g, '~0').replace(/\//g, '~1')}`, seen);
        },
    });
}

// Validate one object: returns a list of error strings (empty when valid).
export async function strictErrors(obj) {
    if (!obj || typeof obj !== 'object' || !obj.apiVersion || !obj.kind)
        return ['not a Kubernetes object (no apiVersion and kind)'];
    let validate;
    try {
        validate = await validatorFor(obj.apiVersion, obj.kind);
    } catch (e) {
        return [e.message];
    }
    const copy = structuredClone(obj);
    const seen = new Map();
    const ok = validate(track(copy, '', seen));
    const errors = ok ? [] : validate.errors.map((e) => `${e.instancePath || '/'}: ${e.keyword} ${JSON.stringify(e.params)}`);
    for (const [target, entry] of seen) {
        if (entry.isArray) continue;
        for (const k of Object.keys(target))
            if (!entry.keys.has(k)) errors.push(`${entry.pointer || '/'}: unknown field "${k}"`);
    }
    // Below an unknown field nothing is read, so it is reported once, where it starts.
    return errors;
}
