// Rendering the chart and reading what it renders (for t0003-objects.mjs).
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

export const srcdir = process.env.B4BOX_SRCDIR;
export const chartTests = path.join(srcdir, 'tests/chart');
export const chartDir = path.join(srcdir, 'charts/b4-sandbox-infra');

export function valueSets() {
    return ['default', ...readdirSync(path.join(chartTests, 'values'))
        .filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -5)).sort()];
}

// helm template for one value set (plus extra helm args): the list of objects. YAML 1.1, as
// the API server's decoder (sigs.k8s.io/yaml over go-yaml) reads manifests.
export function render(helm, set, extra = []) {
    const args = ['template', 'b4-sandbox-infra', chartDir, '--namespace', 'b4-app'];
    if (set !== 'default') args.push('--values', path.join(chartTests, 'values', `${set}.yaml`));
    const out = execFileSync(helm, [...args, ...extra], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const objects = [];
    for (const doc of parseAllDocuments(out, { version: '1.1', uniqueKeys: true })) {
        if (doc.errors.length) throw new Error(`${set}: ${doc.errors[0].message}`);
        const o = doc.toJS();
        if (o !== null) objects.push(o);
    }
    return objects;
}

// Does a LabelSelector (matchLabels + matchExpressions) select these labels?
export function selects(selector, labels = {}) {
    for (const [k, v] of Object.entries(selector.matchLabels ?? {}))
        if (labels[k] !== v) return false;
    for (const e of selector.matchExpressions ?? []) {
        const has = Object.hasOwn(labels, e.key);
        const ok = { In: has && e.values.includes(labels[e.key]),
            NotIn: !has || !e.values.includes(labels[e.key]),
            Exists: has, DoesNotExist: !has }[e.operator];
        if (!ok) return false;
    }
    return true;
}

// RBAC rules that reach Secrets or use a wildcard anywhere.
export function rbacViolations(obj) {
    const v = [];
    for (const [i, r] of (obj.rules ?? []).entries()) {
        for (const f of ['apiGroups', 'resources', 'verbs', 'resourceNames', 'nonResourceURLs'])
            if ((r[f] ?? []).some((x) => x.includes('*'))) v.push(`${obj.kind} ${obj.metadata.name} rule ${i}: wildcard in ${f}`);
        if ((r.resources ?? []).some((x) => x === 'secrets' || x.startsWith('secrets/')))
            v.push(`${obj.kind} ${obj.metadata.name} rule ${i}: grants secrets`);
    }
    if (obj.aggregationRule) v.push(`${obj.kind} ${obj.metadata.name}: aggregationRule`);
    return v;
}

// A Role's rules as "group/resource: verbs" lines, sorted (for exact comparisons).
export function ruleTable(role) {
    const lines = [];
    for (const r of role.rules ?? [])
        for (const g of r.apiGroups ?? [])
            for (const res of r.resources ?? [])
                lines.push(`${g || 'core'}/${res}: ${[...r.verbs].sort().join(',')}`);
    return lines.sort();
}
