#!/usr/bin/env node
// Every object charts/b4-sandbox-infra renders, for each value set:
// - valid against the Kubernetes schemas (kubernetes-models), unknown fields refused;
// - every Pod template within the Restricted Pod Security Standard (lib/pss.mjs);
// - RBAC: no Secrets, no wildcard, no cluster-scoped RBAC, the orchestrator and reaper Roles
//   exactly the verbs docs/kubernetes.md lists, the FlowSchema (apf) for the same subjects;
// - the namespace's Pod Security labels, and each object in the namespace it belongs in;
// - the NetworkPolicies select the provider's Pods (fixtures/keeper-pod.json,
//   fixtures/reader-pod.json: the labels docs/kubernetes.md gives the provider) as documented.
// And the checkers themselves: each must refuse what it exists to refuse.
// Env: B4BOX_SRCDIR, HELM (the helm binary; t0003-objects.sh unpacks it).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { chartTests, rbacViolations, render, ruleTable, selects, srcdir, valueSets } from './lib/k8s.mjs';
import { podTemplates, restrictedViolations } from './lib/pss.mjs';
import { strictErrors } from './lib/strict.mjs';

const helm = process.env.HELM;
const fixture = (n) => JSON.parse(readFileSync(path.join(chartTests, 'fixtures', n), 'utf8'));
const keeper = fixture('keeper-pod.json');
const reader = fixture('reader-pod.json');

// The provider's own golden objects (src/lib/kube/objects.c, tests/data/kube/golden) where the
// tree has them: every keeper and reader Pod must be within Restricted, except the one built
// for security.runAsNonRoot: false, which must be refused (the reason for podSecurity.level
// baseline).
const providerGolden = path.join(srcdir, 'tests/data/kube/golden');
const providerPods = (existsSync(providerGolden) ? readdirSync(providerGolden) : [])
    .filter((f) => /^(keeper|reader).*\.json$/.test(f)).sort()
    .map((f) => ({ file: f, pod: JSON.parse(readFileSync(path.join(providerGolden, f), 'utf8')),
        root: f.includes('allow-root') }));

const results = [];
function check(name, problems) {
    results.push({ name, problems });
}

const ORCHESTRATOR = [
    'core/persistentvolumeclaims: create,delete,get,list,patch,watch',
    'core/pods/exec: create,get',
    'core/pods: create,delete,get,list,patch,watch',
    'networking.k8s.io/networkpolicies: create,delete,get,list,patch,update',
];
const REAPER = ['core/persistentvolumeclaims: delete,get,list,patch', 'core/pods: delete,list'];

function diffTables(want, got) {
    const p = [];
    for (const l of want) if (!got.includes(l)) p.push(`missing: ${l}`);
    for (const l of got) if (!want.includes(l)) p.push(`extra: ${l}`);
    return p;
}

async function checkSet(set) {
    const values = set === 'default' ? {} : (await import('yaml')).parse(
        readFileSync(path.join(chartTests, 'values', `${set}.yaml`), 'utf8')) ?? {};
    const sandboxNs = values.namespace?.name ?? 'b4-sandboxes';
    const objs = render(helm, set);
    const byKind = (k) => objs.filter((o) => o.kind === k);
    const named = (k, n) => objs.find((o) => o.kind === k && o.metadata.name === n);

    const schema = [];
    for (const o of objs)
        for (const e of await strictErrors(o)) schema.push(`${o.kind} ${o.metadata?.name}: ${e}`);
    check(`${set}: ${objs.length} objects valid against the Kubernetes schemas, unknown fields refused`, schema);

    const pss = [];
    let templates = 0;
    for (const o of objs)
        for (const [where, meta, spec] of podTemplates(o)) {
            templates++;
            for (const v of restrictedViolations(spec, meta)) pss.push(`${where}: ${v}`);
            if (spec.automountServiceAccountToken === undefined)
                pss.push(`${where}: automountServiceAccountToken left to the default`);
        }
    if ((values.reaper?.enabled ?? true) && templates === 0) pss.push('no Pod template rendered (the reaper CronJob?)');
    check(`${set}: ${templates} Pod template(s) within the Restricted profile`, pss);

    const rbac = [];
    for (const k of ['ClusterRole', 'ClusterRoleBinding'])
        for (const o of byKind(k)) rbac.push(`cluster-scoped ${k} ${o.metadata.name}`);
    for (const o of byKind('Role')) rbac.push(...rbacViolations(o));
    const orchName = values.orchestrator?.name ?? 'b4-orchestrator';
    const orch = named('Role', orchName);
    if (!orch) rbac.push(`no Role ${orchName}`);
    else rbac.push(...diffTables(values.orchestrator?.events ? [...ORCHESTRATOR, 'core/events: list'].sort() : ORCHESTRATOR, ruleTable(orch)));
    const binding = named('RoleBinding', orchName);
    if (!binding || binding.roleRef.name !== orchName || binding.roleRef.kind !== 'Role') rbac.push('orchestrator RoleBinding missing or bound elsewhere');
    const wantSubjects = (values.orchestrator?.serviceAccount?.create ? 1 : 0) + (values.orchestrator?.subjects ?? []).length;
    if (binding && (binding.subjects ?? []).length !== wantSubjects) rbac.push(`orchestrator subjects: ${binding.subjects?.length} not ${wantSubjects}`);
    for (const s of binding?.subjects ?? [])
        if (s.kind === 'ServiceAccount' ? !s.namespace || s.apiGroup : s.apiGroup !== 'rbac.authorization.k8s.io') rbac.push(`bad subject ${JSON.stringify(s)}`);
    const reap = named('Role', 'b4-pvc-reaper');
    if (values.reaper?.enabled ?? true) {
        if (!reap) rbac.push('no reaper Role');
        else rbac.push(...diffTables(REAPER, ruleTable(reap)));
    } else if (reap) rbac.push('reaper Role rendered with the reaper disabled');
    const flow = byKind('FlowSchema');
    if (Boolean(values.apf?.enabled) !== (flow.length === 1)) rbac.push('a FlowSchema rendered iff apf.enabled');
    for (const f of flow) {
        const name = (s) => s.serviceAccount ? `ServiceAccount ${s.serviceAccount.namespace}/${s.serviceAccount.name}`
            : `${s.kind} ${(s.user ?? s.group).name}`;
        const bound = (binding?.subjects ?? []).map((s) => `${s.kind} ${s.namespace ? `${s.namespace}/` : ''}${s.name}`).sort();
        const flowed = f.spec.rules.flatMap((r) => r.subjects).map(name).sort();
        if (bound.join() !== flowed.join()) rbac.push(`FlowSchema subjects ${flowed} are not the RoleBinding's ${bound}`);
        if (!named('PriorityLevelConfiguration', f.spec.priorityLevelConfiguration.name)) rbac.push('the FlowSchema names no rendered priority level');
    }
    check(`${set}: RBAC grants no Secrets, no wildcard, exactly the documented verbs`, rbac);

    const ns = [];
    const nsObj = byKind('Namespace')[0];
    if ((values.namespace?.create ?? true) !== Boolean(nsObj)) ns.push('Namespace rendered iff namespace.create');
    if (nsObj) {
        const l = nsObj.metadata.labels;
        const level = values.podSecurity?.level ?? 'restricted';
        if (nsObj.metadata.name !== sandboxNs) ns.push(`Namespace ${nsObj.metadata.name}`);
        if (l['pod-security.kubernetes.io/enforce'] !== level) ns.push(`enforce ${l['pod-security.kubernetes.io/enforce']}`);
        for (const m of ['audit', 'warn'])
            if (l[`pod-security.kubernetes.io/${m}`] !== 'restricted') ns.push(`${m} is not restricted`);
    }
    for (const o of objs) {
        if (['Namespace', 'FlowSchema', 'PriorityLevelConfiguration'].includes(o.kind)) {
            if (o.metadata.namespace) ns.push(`cluster-scoped ${o.kind} ${o.metadata.name} has a namespace`);
            continue;
        }
        const inRelease = ['ServiceAccount', 'CronJob'].includes(o.kind);
        const want = inRelease ? 'b4-app' : sandboxNs;
        if (o.metadata.namespace !== want) ns.push(`${o.kind} ${o.metadata.name} in ${o.metadata.namespace}, not ${want}`);
    }
    check(`${set}: namespace labels and every object's namespace`, ns);

    const net = [];
    const np = values.networkPolicy ?? {};
    const policies = byKind('NetworkPolicy');
    const deny = named('NetworkPolicy', 'b4-default-deny');
    const denyEgress = np.defaultDenyEgress ?? true;
    const denyIngress = np.denyIngress ?? true;
    if (denyEgress || denyIngress) {
        if (!deny) net.push('no b4-default-deny');
        else {
            const types = [...(deny.spec.policyTypes ?? [])].sort().join(',');
            const want = [denyEgress && 'Egress', denyIngress && 'Ingress'].filter(Boolean).join(',');
            if (types !== want) net.push(`b4-default-deny policyTypes ${types}, not ${want}`);
            if (deny.spec.egress || deny.spec.ingress) net.push('b4-default-deny has rules');
            for (const p of [keeper, reader, ...providerPods.map((g) => g.pod)])
                if (!selects(deny.spec.podSelector, p.metadata.labels)) net.push(`b4-default-deny misses ${p.metadata.name}`);
        }
    } else if (deny) net.push('b4-default-deny rendered although disabled');
    const dns = named('NetworkPolicy', 'b4-allow-dns');
    if (Boolean(dns) !== Boolean(np.allowDNS)) net.push('b4-allow-dns rendered iff networkPolicy.allowDNS');
    if (dns) {
        if (!selects(dns.spec.podSelector, keeper.metadata.labels)) net.push('b4-allow-dns misses the keeper');
        const ports = dns.spec.egress.flatMap((r) => r.ports ?? []).map((p) => `${p.protocol}/${p.port}`).sort().join(',');
        if (ports !== 'TCP/53,UDP/53' || dns.spec.egress.length !== 1) net.push(`b4-allow-dns opens ${ports}`);
    }
    if (values.readers?.enabled ?? true) {
        const rd = named('NetworkPolicy', 'b4-reader-deny-all');
        if (!rd) net.push('no b4-reader-deny-all');
        else {
            if (!selects(rd.spec.podSelector, reader.metadata.labels)) net.push('b4-reader-deny-all misses the reader');
            if (selects(rd.spec.podSelector, keeper.metadata.labels)) net.push('b4-reader-deny-all selects the keeper');
            if ([...rd.spec.policyTypes].sort().join(',') !== 'Egress,Ingress') net.push('b4-reader-deny-all does not deny both ways');
        }
    }
    for (const p of policies)
        if (selects(p.spec.podSelector, reader.metadata.labels) && (p.spec.egress?.length || p.spec.ingress?.length))
            net.push(`${p.metadata.name} allows traffic to or from readers`);
    for (const ds of byKind('DaemonSet')) {
        const labels = ds.spec.template.metadata.labels;
        if (deny && !selects(deny.spec.podSelector, labels)) net.push(`b4-default-deny misses DaemonSet ${ds.metadata.name}`);
        if (dns && selects(dns.spec.podSelector, labels)) net.push(`b4-allow-dns selects DaemonSet ${ds.metadata.name}`);
        if (labels['b4.run/thread']) net.push(`DaemonSet ${ds.metadata.name} carries a thread label`);
    }
    if (Boolean(values.prepull?.enabled) !== (byKind('DaemonSet').length === 1)) net.push('the pre-pull DaemonSet rendered iff prepull.enabled');
    check(`${set}: NetworkPolicies select the provider's Pods as documented`, net);
}

// The checkers refuse what they exist to refuse (else the tests above could never fail).
async function selfTests() {
    const strict = [];
    for (const f of [keeper, reader])
        for (const e of await strictErrors(f)) strict.push(`fixture ${f.metadata.name}: ${e}`);
    const bad = [
        ['unknown field', (p) => { p.spec.containers[0].securityContext.privilegd = false; }, /unknown field "privilegd"/],
        ['unknown top-level field', (p) => { p.spc = {}; }, /unknown field "spc"/],
        ['wrong type', (p) => { p.spec.containers[0].securityContext.allowPrivilegeEscalation = 'false'; }, /type/],
        ['bad enum', (p) => { p.spec.restartPolicy = 'Sometimes'; }, /enum/],
        ['missing required', (p) => { delete p.spec.containers[0].name; }, /required/],
        ['unknown kind', (p) => { p.kind = 'Pud'; }, /no schema/],
    ];
    for (const [what, mutate, want] of bad) {
        const p = structuredClone(keeper);
        mutate(p);
        const errs = await strictErrors(p);
        if (!errs.some((e) => want.test(e))) strict.push(`${what} not refused (${errs.join('; ') || 'accepted'})`);
    }
    check('the strict validator accepts the provider fixtures and refuses unknown fields, types, enums, kinds', strict);

    const pss = [];
    for (const f of [keeper, reader])
        for (const v of restrictedViolations(f.spec, f.metadata)) pss.push(`fixture ${f.metadata.name}: ${v}`);
    const c = (p) => p.spec.containers[0];
    const mutations = {
        hostNetwork: (p) => { p.spec.hostNetwork = true; },
        hostPID: (p) => { p.spec.hostPID = true; },
        hostIPC: (p) => { p.spec.hostIPC = true; },
        privileged: (p) => { c(p).securityContext.privileged = true; },
        'allowPrivilegeEscalation unset': (p) => { delete c(p).securityContext.allowPrivilegeEscalation; },
        'allowPrivilegeEscalation true': (p) => { c(p).securityContext.allowPrivilegeEscalation = true; },
        'runAsNonRoot unset': (p) => { delete p.spec.securityContext.runAsNonRoot; },
        'runAsNonRoot false in the container': (p) => { c(p).securityContext.runAsNonRoot = false; },
        'runAsUser 0': (p) => { c(p).securityContext.runAsUser = 0; },
        'seccomp unset': (p) => { delete p.spec.securityContext.seccompProfile; },
        'seccomp Unconfined': (p) => { c(p).securityContext.seccompProfile = { type: 'Unconfined' }; },
        'capabilities not dropped': (p) => { delete c(p).securityContext.capabilities; },
        'capability added': (p) => { c(p).securityContext.capabilities.add = ['SYS_ADMIN']; },
        'hostPath volume': (p) => { p.spec.volumes.push({ name: 'h', hostPath: { path: '/' } }); },
        'nfs volume': (p) => { p.spec.volumes.push({ name: 'n', nfs: { server: 'x', path: '/' } }); },
        hostPort: (p) => { c(p).ports = [{ containerPort: 80, hostPort: 80 }]; },
        'procMount Unmasked': (p) => { c(p).securityContext.procMount = 'Unmasked'; },
        'unsafe sysctl': (p) => { p.spec.securityContext.sysctls = [{ name: 'kernel.msgmax', value: '1' }]; },
        'SELinux user': (p) => { c(p).securityContext.seLinuxOptions = { user: 'system_u' }; },
        'AppArmor unconfined': (p) => { c(p).securityContext.appArmorProfile = { type: 'Unconfined' }; },
        'privileged init container': (p) => { p.spec.initContainers = [{ ...structuredClone(c(p)), name: 'i', securityContext: { privileged: true } }]; },
        'hostProcess': (p) => { p.spec.securityContext.windowsOptions = { hostProcess: true }; },
    };
    for (const [what, mutate] of Object.entries(mutations)) {
        const p = structuredClone(keeper);
        mutate(p);
        if (restrictedViolations(p.spec, p.metadata).length === 0) pss.push(`${what}: not refused`);
    }
    check(`the Restricted checker passes the provider fixtures and refuses ${Object.keys(mutations).length} violations`, pss);

    const golden = [];
    for (const { file, pod, root } of providerPods) {
        const v = restrictedViolations(pod.spec, pod.metadata);
        if (root && !v.some((x) => x.includes('runAsNonRoot'))) golden.push(`${file}: runs as root, yet within Restricted`);
        if (!root) for (const x of v) golden.push(`${file}: ${x}`);
        for (const e of await strictErrors(pod)) golden.push(`${file}: ${e}`);
    }
    check(`the provider's ${providerPods.length} golden Pod(s) in tests/data/kube/golden: strict-valid, within Restricted but for the root one`, golden);

    const rbac = [];
    const role = { kind: 'Role', metadata: { name: 'x' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] };
    if (rbacViolations(role).length) rbac.push('a clean Role refused');
    for (const [what, rule] of [['secrets', { apiGroups: [''], resources: ['secrets'], verbs: ['get'] }],
        ['wildcard verb', { apiGroups: [''], resources: ['pods'], verbs: ['*'] }],
        ['wildcard resource', { apiGroups: [''], resources: ['*'], verbs: ['get'] }],
        ['wildcard group', { apiGroups: ['*'], resources: ['pods'], verbs: ['get'] }]]) {
        if (!rbacViolations({ ...role, rules: [rule] }).length) rbac.push(`${what} not refused`);
    }
    check('the RBAC checker refuses Secrets and wildcards', rbac);
}

try {
    for (const set of valueSets()) await checkSet(set);
    await selfTests();
} catch (e) {
    console.log(`Bail out! ${e.message.split('\n')[0]}`);
    process.exit(1);
}
console.log(`1..${results.length}`);
for (const [i, r] of results.entries()) {
    console.log(`${r.problems.length ? 'not ok' : 'ok'} ${i + 1} - ${r.name}`);
    for (const p of r.problems) console.log(`# ${p}`);
}
process.exit(results.some((r) => r.problems.length) ? 1 : 0);
