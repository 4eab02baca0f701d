// Honesty scenario 2: @kubernetes/client-node (pinned in package-lock.json) against the fake:
// CoreV1Api create/read/list/patch/delete of Pods and PVCs, a Watch, NetworkingV1Api,
// AuthorizationV1Api, Exec with stdin (v5 CLOSE) and the status callback's exit code.
// Run by with-fake.sh (KUBECONFIG, FAKE_URL, FAKE_ADMIN, FAKE_CA set); prints TAP.
import { readFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';

const NS = 'default';
let n = 0;
let failed = 0;
function check(name, cond, detail) {
    n++;
    if (cond) {
        console.log(`ok ${n} - ${name}`);
    } else {
        failed++;
        console.log(`not ok ${n} - ${name}`);
        if (detail !== undefined) console.log(`# ${JSON.stringify(detail)}`);
    }
}

function ctl(method, path, body) {
    return new Promise((resolve, reject) => {
        const url = new URL('/_fake' + path, process.env.FAKE_URL);
        const req = https.request(url, {
            method, ca: readFileSync(process.env.FAKE_CA),
            headers: { Authorization: 'Bearer ' + process.env.FAKE_ADMIN, 'Content-Type': 'application/json' },
        }, (res) => {
            let data = '';
            res.on('data', (c) => (data += c));
            res.on('end', () => resolve(JSON.parse(data || '{}')));
        });
        req.on('error', reject);
        req.end(body ? JSON.stringify(body) : undefined);
    });
}

async function status(promise) {
    try {
        await promise;
        return { code: 0 };
    } catch (e) {
        const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
        return { code: e.code, body };
    }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const kc = new k8s.KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG);
const core = kc.makeApiClient(k8s.CoreV1Api);
const net = kc.makeApiClient(k8s.NetworkingV1Api);
const authz = kc.makeApiClient(k8s.AuthorizationV1Api);

const labels = { 'app.kubernetes.io/managed-by': 'b4', 'b4.run/thread': 'node1' };
const pvc = {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim',
    metadata: { name: 'b4-sbx-vol-node1', labels },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } },
};
const pod = {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'b4-sbx-node1', labels },
    spec: {
        automountServiceAccountToken: false, terminationGracePeriodSeconds: 1,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
        containers: [{
            name: 'sandbox', image: 'node:24-slim', command: ['sleep', 'infinity'], workingDir: '/workspace',
            securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
            volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }, { name: 'b4', mountPath: '/b4' }],
        }],
        volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: 'b4-sbx-vol-node1' } },
            { name: 'b4', emptyDir: { medium: 'Memory' } }],
    },
};

// The watch first, from the list's resourceVersion, so no transition is missed.
const list0 = await core.listNamespacedPod({ namespace: NS });
check('listNamespacedPod: an empty PodList with a resourceVersion', list0.items.length === 0 && !!list0.metadata.resourceVersion);
const seen = [];
let running;
const ready = new Promise((resolve) => (running = resolve));
const watch = new k8s.Watch(kc);
const controller = await watch.watch(`/api/v1/namespaces/${NS}/pods`,
    { resourceVersion: list0.metadata.resourceVersion, allowWatchBookmarks: true, labelSelector: 'b4.run/thread=node1' },
    (type, obj) => {
        seen.push(type);
        if (type !== 'BOOKMARK' && obj.status?.phase === 'Running') running(obj);
    }, () => {});

const createdPvc = await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: pvc });
check('createNamespacedPersistentVolumeClaim: uid, resourceVersion, pvc-protection',
    !!createdPvc.metadata.uid && !!createdPvc.metadata.resourceVersion &&
    createdPvc.metadata.finalizers?.includes('kubernetes.io/pvc-protection'));
const again = await status(core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: pvc }));
check('a second create is 409 AlreadyExists', again.code === 409 && again.body?.reason === 'AlreadyExists', again);
const created = await core.createNamespacedPod({ namespace: NS, body: pod });
check('createNamespacedPod: Pending at first', created.status?.phase === 'Pending');
const runningPod = await Promise.race([ready, sleep(10000).then(() => null)]);
check('the Watch sees ADDED then the Pod Running', runningPod !== null && seen[0] === 'ADDED', seen);
check('Running carries podIP, nodeName, Ready and a running sandbox container', runningPod &&
    !!runningPod.status.podIP && runningPod.spec.nodeName === 'fake-node-1' &&
    runningPod.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') &&
    !!runningPod.status.containerStatuses[0].state.running);

const read = await core.readNamespacedPod({ name: 'b4-sbx-node1', namespace: NS });
check('readNamespacedPod: creationTimestamp decodes to a Date', read.metadata.creationTimestamp instanceof Date);
const sel = await core.listNamespacedPod({ namespace: NS, labelSelector: 'b4.run/thread in (node1,other),app.kubernetes.io/managed-by' });
check('listNamespacedPod with a set-based selector', sel.items.length === 1 && sel.items[0].metadata.name === 'b4-sbx-node1');
const none = await core.listNamespacedPod({ namespace: NS, labelSelector: 'b4.run/thread notin (node1)' });
check('notin excludes it', none.items.length === 0);

const merge = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const patched = await core.patchNamespacedPod({ name: 'b4-sbx-node1', namespace: NS,
    body: { metadata: { labels: { 'b4box.io/pool': null, 'b4box.io/adopted': 'yes' } } } }, merge);
check('merge-patch of labels', patched.metadata.labels['b4box.io/adopted'] === 'yes' &&
    Number(patched.metadata.resourceVersion) > Number(read.metadata.resourceVersion));
const stale = await status(core.patchNamespacedPod({ name: 'b4-sbx-node1', namespace: NS,
    body: { metadata: { resourceVersion: read.metadata.resourceVersion, labels: { x: 'y' } } } }, merge));
check('merge-patch with a stale resourceVersion is 409 Conflict', stale.code === 409 && stale.body?.reason === 'Conflict', stale);
const jsonPatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch);
const tested = await status(core.patchNamespacedPod({ name: 'b4-sbx-node1', namespace: NS,
    body: [{ op: 'test', path: '/metadata/labels/b4box.io~1adopted', value: 'no' },
        { op: 'add', path: '/metadata/labels/won', value: 'me' }] }, jsonPatch));
const after = await core.readNamespacedPod({ name: 'b4-sbx-node1', namespace: NS });
check('a failed JSON-patch test op is 422 and changes nothing', tested.code === 422 &&
    after.metadata.labels.won === undefined && after.metadata.resourceVersion === patched.metadata.resourceVersion, tested);
const boundPvc = await core.readNamespacedPersistentVolumeClaim({ name: 'b4-sbx-vol-node1', namespace: NS });
check('readNamespacedPersistentVolumeClaim: Bound with volumeName and capacity', boundPvc.status?.phase === 'Bound' &&
    boundPvc.spec.volumeName === 'pvc-' + createdPvc.metadata.uid && boundPvc.status.capacity?.storage === '2Gi');
const pvcs = await core.listNamespacedPersistentVolumeClaim({ namespace: NS, labelSelector: 'app.kubernetes.io/managed-by=b4' });
check('listNamespacedPersistentVolumeClaim by label', pvcs.items.map((p) => p.metadata.name).join() === 'b4-sbx-vol-node1');
const smp = await core.patchNamespacedPersistentVolumeClaim({ name: 'b4-sbx-vol-node1', namespace: NS,
    body: { metadata: { annotations: { 'b4box.io/workspace-record': '{"ready":true}' } } } },
k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch));
check('strategic-merge patch of a PVC annotation', smp.metadata.annotations['b4box.io/workspace-record'] === '{"ready":true}');

const np = await net.createNamespacedNetworkPolicy({ namespace: NS, body: {
    metadata: { name: 'b4-sbx-net-node1', labels,
        ownerReferences: [{ apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: pvc.metadata.name, uid: createdPvc.metadata.uid }] },
    spec: { podSelector: { matchLabels: { 'b4.run/thread': 'node1' } }, policyTypes: ['Ingress', 'Egress'], egress: [] },
} });
check('createNamespacedNetworkPolicy: generation 1', np.metadata.generation === 1);
const badNp = await status(net.createNamespacedNetworkPolicy({ namespace: NS, body: {
    metadata: { name: 'bad' }, spec: { podSelector: {}, egress: [{ to: [{ ipBlock: { cidr: 'nope' } }] }] } } }));
check('an invalid CIDR is 422 Invalid naming the field', badNp.code === 422 &&
    badNp.body?.details?.causes?.[0]?.field === 'spec.egress[0].to[0].ipBlock.cidr', badNp);

const review = await authz.createSelfSubjectAccessReview({ body: { spec: { resourceAttributes:
    { namespace: NS, verb: 'create', resource: 'pods', subresource: 'exec' } } } });
check('SelfSubjectAccessReview: allowed', review.status?.allowed === true);

// Exec: stdin on channel 0, the v5 CLOSE ends cat, the status callback carries the exit code.
const exec = new k8s.Exec(kc);
async function run(command, input) {
    const out = new PassThrough();
    const err = new PassThrough();
    let stdout = '';
    let stderr = '';
    out.on('data', (c) => (stdout += c));
    err.on('data', (c) => (stderr += c));
    let st;
    const done = new Promise((resolve) => {
        exec.exec(NS, 'b4-sbx-node1', 'sandbox', command, out, err,
            input === undefined ? null : Readable.from([input]), false, (s) => { st = s; resolve(); })
            .then((ws) => ws.on('close', () => resolve()), (e) => { st = { error: String(e) }; resolve(); });
    });
    await Promise.race([done, sleep(10000)]);
    await sleep(20);
    const cause = st?.details?.causes?.find((c) => c.reason === 'ExitCode');
    return { stdout, stderr, status: st, code: st?.status === 'Success' ? 0 : cause ? Number(cause.message) : -1 };
}
const r1 = await run(['sh', '-c', 'cat > /workspace/in.txt; wc -c < /workspace/in.txt; exit 3'], 'x'.repeat(100000));
check('exec with 100 kB of stdin: the command read it all and saw EOF', r1.stdout.trim() === '100000', r1.stdout);
check('the status callback: NonZeroExitCode with the ExitCode cause 3', r1.code === 3 && r1.status.reason === 'NonZeroExitCode', r1.status);
const r2 = await run(['sh', '-c', 'id -u; echo err >&2']);
check('exec: stdout and stderr on their channels, Success', r2.stdout === '1000\n' && r2.stderr === 'err\n' && r2.code === 0, r2);
const r3 = await run(['sh', '-c', 'echo hi > /b4/x && cat /b4/x && touch /usr/x']);
check('the emptyDir is writable, the root is not', r3.stdout === 'hi\n' && r3.code === 1 && /Read-only/.test(r3.stderr), r3);
const log = await ctl('GET', '/log');
const execs = log.entries.filter((e) => e.verb === 'exec');
check('client-node offered v5 first and got it', execs.every((e) => e.subprotocol === 'v5.channel.k8s.io' &&
    e.offered[0] === 'v5.channel.k8s.io' && e.offered.includes('v4.channel.k8s.io')), execs.map((e) => e.offered));

const del = await core.deleteNamespacedPod({ name: 'b4-sbx-node1', namespace: NS, gracePeriodSeconds: 1 });
check('deleteNamespacedPod: the Pod comes back with a deletionTimestamp', !!del.metadata.deletionTimestamp);
for (let i = 0; i < 100 && !seen.includes('DELETED'); i++) await sleep(50);
check('the Watch sees MODIFIED (terminating) then DELETED', seen.includes('DELETED'), seen);
controller.abort();
const gone = await status(core.readNamespacedPod({ name: 'b4-sbx-node1', namespace: NS }));
check('then readNamespacedPod is 404 NotFound with the Status body', gone.code === 404 &&
    gone.body?.message === 'pods "b4-sbx-node1" not found' && gone.body?.details?.kind === 'pods', gone);
await core.deleteNamespacedPersistentVolumeClaim({ name: 'b4-sbx-vol-node1', namespace: NS });
let nps = [];
for (let i = 0; i < 100; i++) {
    nps = (await net.listNamespacedNetworkPolicy({ namespace: NS })).items;
    if (nps.length === 0) break;
    await sleep(50);
}
check('deleting the PVC garbage-collects the NetworkPolicy it owns', nps.length === 0, nps.map((p) => p.metadata.name));
const unknown = (await ctl('GET', '/log')).entries.filter((e) => e.unknownFields).map((e) => [e.path, e.unknownFields]);
check('every object client-node sent has only fields the fake\'s schema knows', unknown.length === 0, unknown);
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
