// The Pod Security Standards' Restricted profile (which includes Baseline), as the API server's
// PodSecurity admission checks it (https://kubernetes.io/docs/concepts/security/pod-security-standards/,
// policy version latest), over one Pod template. Returns the violations as strings.

const RESTRICTED_VOLUMES = new Set(['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral',
    'persistentVolumeClaim', 'projected', 'secret']);
const SAFE_SYSCTLS = new Set(['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range',
    'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range',
    'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout',
    'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes']);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t']);
const APPARMOR_OK = new Set(['RuntimeDefault', 'Localhost']);
const SECCOMP_OK = new Set(['RuntimeDefault', 'Localhost']);

function containersOf(spec) {
    const out = [];
    for (const field of ['initContainers', 'containers', 'ephemeralContainers'])
        for (const [i, c] of (spec[field] ?? []).entries()) out.push([`${field}[${i}] ${c.name}`, c]);
    return out;
}

function checkSeLinux(where, opts, v) {
    if (!opts) return;
    if (!SELINUX_TYPES.has(opts.type ?? '')) v.push(`${where}: seLinuxOptions.type ${opts.type}`);
    if (opts.user || opts.role) v.push(`${where}: seLinuxOptions.user/role set`);
}

// spec: a PodSpec; metadata: the template's metadata (AppArmor annotations live there).
export function restrictedViolations(spec, metadata = {}) {
    const v = [];
    const psc = spec.securityContext ?? {};
    for (const f of ['hostNetwork', 'hostPID', 'hostIPC'])
        if (spec[f]) v.push(`${f} is true`);
    if (psc.windowsOptions?.hostProcess) v.push('pod windowsOptions.hostProcess');
    checkSeLinux('pod', psc.seLinuxOptions, v);
    for (const s of psc.sysctls ?? [])
        if (!SAFE_SYSCTLS.has(s.name)) v.push(`unsafe sysctl ${s.name}`);
    if (psc.runAsUser === 0) v.push('pod runAsUser 0');
    if (psc.appArmorProfile && !APPARMOR_OK.has(psc.appArmorProfile.type))
        v.push(`pod appArmorProfile ${psc.appArmorProfile.type}`);
    const podSeccomp = psc.seccompProfile?.type;
    if (podSeccomp !== undefined && !SECCOMP_OK.has(podSeccomp)) v.push(`pod seccompProfile ${podSeccomp}`);

    for (const vol of spec.volumes ?? []) {
        const types = Object.keys(vol).filter((k) => k !== 'name');
        for (const t of types)
            if (!RESTRICTED_VOLUMES.has(t)) v.push(`volume ${vol.name}: type ${t} not allowed`);
    }
    for (const [k, val] of Object.entries(metadata.annotations ?? {}))
        if (k.startsWith('container.apparmor.security.beta.kubernetes.io/') &&
            !(val === 'runtime/default' || val.startsWith('localhost/')))
            v.push(`AppArmor annotation ${k}: ${val}`);

    const containers = containersOf(spec);
    if (containers.length === 0) v.push('no containers');
    for (const [where, c] of containers) {
        const sc = c.securityContext ?? {};
        if (sc.privileged) v.push(`${where}: privileged`);
        if (sc.windowsOptions?.hostProcess) v.push(`${where}: windowsOptions.hostProcess`);
        if (sc.procMount && sc.procMount !== 'Default') v.push(`${where}: procMount ${sc.procMount}`);
        checkSeLinux(where, sc.seLinuxOptions, v);
        if (sc.appArmorProfile && !APPARMOR_OK.has(sc.appArmorProfile.type))
            v.push(`${where}: appArmorProfile ${sc.appArmorProfile.type}`);
        for (const p of c.ports ?? [])
            if (p.hostPort) v.push(`${where}: hostPort ${p.hostPort}`);
        if (sc.allowPrivilegeEscalation !== false) v.push(`${where}: allowPrivilegeEscalation is not false`);
        const nonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
        if (nonRoot !== true) v.push(`${where}: runAsNonRoot is not true`);
        if (sc.runAsUser === 0) v.push(`${where}: runAsUser 0`);
        const seccomp = sc.seccompProfile?.type ?? podSeccomp;
        if (!SECCOMP_OK.has(seccomp)) v.push(`${where}: seccompProfile ${seccomp ?? 'unset'}`);
        const caps = sc.capabilities ?? {};
        if (!(caps.drop ?? []).includes('ALL')) v.push(`${where}: capabilities do not drop ALL`);
        for (const cap of caps.add ?? [])
            if (cap !== 'NET_BIND_SERVICE') v.push(`${where}: adds capability ${cap}`);
    }
    return v;
}

// Every Pod template in an object: [where, metadata, spec] triples.
export function podTemplates(obj) {
    const name = `${obj.kind} ${obj.metadata?.name}`;
    switch (obj.kind) {
    case 'Pod':
        return [[name, obj.metadata ?? {}, obj.spec ?? {}]];
    case 'PodTemplate':
        return [[name, obj.template?.metadata ?? {}, obj.template?.spec ?? {}]];
    case 'CronJob': {
        const t = obj.spec?.jobTemplate?.spec?.template ?? {};
        return [[name, t.metadata ?? {}, t.spec ?? {}]];
    }
    case 'Job': case 'Deployment': case 'StatefulSet': case 'DaemonSet': case 'ReplicaSet':
    case 'ReplicationController': {
        const t = obj.spec?.template ?? {};
        return [[name, t.metadata ?? {}, t.spec ?? {}]];
    }
    default:
        return [];
    }
}
