/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unprivileged unit tests of native internals: cgroup v2 and v1 logic against fake cgroupfs
 * trees (this machine's v2 has no controllers, so the fake tree is where v2 is proven), the
 * output capture, the mount plan, the launch identity and the seccomp filter's argument rules
 * (loaded in a child).
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "../keeper/keeper-proto.h" /* KEEPER_CG_* */
#include "b4-test.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "core/capture.h"
#include "core/launch.h"
#include "native/native.h"

#define ID "0123456789abcdef0123456789abcdef01234567"

static void put(const char *dir, const char *rel, const char *content)
{
        char p[4096];

        (void)snprintf(p, sizeof(p), "%s/%s", dir, rel);
        assert_int_equal(b4_test_write(p, content), 0);
}

static void mk(const char *dir, const char *rel)
{
        char p[4096];

        (void)snprintf(p, sizeof(p), "%s/%s", dir, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void expect(const char *dir, const char *rel, const char *content)
{
        char p[4096], buf[256] = { 0 };
        FILE *f;

        (void)snprintf(p, sizeof(p), "%s/%s", dir, rel);
        f = fopen(p, "re");
        assert_non_null(f);
        assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
        fclose(f);
        assert_string_equal(buf, content);
}

/* The keeper's placement (cgroup_placement_open()): born in @want_clone_fd, and "0" written
 * to each v1 cgroup.procs by the clone child (here @pid, to see which files they are). */
static void place(const struct cgroup *cg, const char *pid, int want_clone_fd, size_t want_n)
{
        struct cgroup_placement pl;

        assert_int_equal(cgroup_placement_open(cg, &pl), 0);
        assert_int_equal(pl.clone_fd, want_clone_fd);
        assert_int_equal(pl.n_procs, want_n);
        assert_true(want_clone_fd < 0 ? pl.clone_procs < 0 : pl.clone_procs >= 0);
        for (size_t i = 0; i < pl.n_procs; i++)
                assert_int_equal(write(pl.procs[i], pid, strlen(pid)), (ssize_t)strlen(pid));
        cgroup_placement_close(&pl);
        assert_int_equal(pl.n_procs, 0);
        assert_true(pl.clone_procs < 0);
}

static void test_cgroup_v2_fake_tree(void **state)
{
        char *t = b4_test_tmpdir();
        struct cgroup_host h;
        struct cgroup cg;
        struct cgroup_limits lim = { .memory_bytes = 64u << 20, .cpus = 1.5, .pids = 99 };
        static const char *const files[] = {
                "pids.max",     "memory.max",  "memory.swap.max",       "cpu.max",
                "cgroup.procs", "cgroup.kill", "cgroup.subtree_control"
        };

        put(t, "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
        put(t, "cgroup.subtree_control", "");
        mk(t, "b4box");
        put(t, "b4box/cgroup.subtree_control", "");
        mk(t, "b4box/" ID);
        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                char rel[128];
                (void)snprintf(rel, sizeof(rel), "b4box/" ID "/%s", files[i]);
                put(t, rel, "");
        }
        cgroup_host_probe(open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC), &h);
        assert_int_equal(h.mode, CGROUP_V2);
        assert_true(h.has[0] && h.has[1] && h.has[2]);
        assert_int_equal(cgroup_create(&h, ID, &lim, &cg, NULL), 0);
        expect(t, "b4box/" ID "/pids.max", "99");
        expect(t, "b4box/" ID "/memory.max", "67108864");
        expect(t, "b4box/" ID "/memory.swap.max", "0");
        expect(t, "b4box/" ID "/cpu.max", "150000 100000");
        expect(t, "cgroup.subtree_control", "+pids +memory +cpu");
        expect(t, "b4box/cgroup.subtree_control", "+pids +memory +cpu");
        place(&cg, "4242", cg.dirfd[0], 0); /* v2: born in it, nothing to write */
        cgroup_close(&cg);
        cgroup_host_release(&h);
        b4_test_rmrf(t);
        free(t);
}

/* A v1 host without freezer: pids, memory and cpu dirs of ID, and cgroup2 mounted at
 * unified with no controllers (the hybrid layout). */
static void mk_v1_tree(const char *t)
{
        mk(t, "unified");
        put(t, "unified/cgroup.controllers", "\n"); /* v2 mounted, nothing delegated */
        put(t, "unified/cgroup.procs", "");
        mk(t, "pids");
        put(t, "pids/cgroup.procs", "");
        mk(t, "pids/b4box");
        mk(t, "pids/b4box/" ID);
        put(t, "pids/b4box/" ID "/pids.max", "");
        put(t, "pids/b4box/" ID "/cgroup.procs", "");
        mk(t, "memory");
        put(t, "memory/cgroup.procs", "");
        mk(t, "memory/b4box");
        mk(t, "memory/b4box/" ID);
        put(t, "memory/b4box/" ID "/memory.limit_in_bytes", "");
        put(t, "memory/b4box/" ID "/cgroup.procs", "");
        mk(t, "cpu");
        put(t, "cpu/cgroup.procs", "");
        mk(t, "cpu/b4box");
        mk(t, "cpu/b4box/" ID);
        put(t, "cpu/b4box/" ID "/cpu.cfs_period_us", "");
        put(t, "cpu/b4box/" ID "/cpu.cfs_quota_us", "");
        put(t, "cpu/b4box/" ID "/cgroup.procs", "");
}

static bool exists(const char *dir, const char *rel)
{
        char p[4096];

        (void)snprintf(p, sizeof(p), "%s/%s", dir, rel);
        return access(p, F_OK) == 0;
}

static void test_cgroup_v1_fake_tree(void **state)
{
        char *t = b4_test_tmpdir();
        struct cgroup_host h;
        struct cgroup cg;
        struct cgroup_limits lim = { .memory_bytes = 1u << 20, .cpus = 0.5, .pids = 7 };

        mk_v1_tree(t);
        cgroup_host_probe(open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC), &h);
        assert_int_equal(h.mode, CGROUP_V1);
        assert_true(h.has[0] && h.has[1] && h.has[2]);
        assert_false(h.has[3]); /* no freezer here */
        assert_int_equal(cgroup_create(&h, ID, &lim, &cg, NULL), 0);
        expect(t, "pids/b4box/" ID "/pids.max", "7");
        expect(t, "memory/b4box/" ID "/memory.limit_in_bytes", "1048576");
        expect(t, "cpu/b4box/" ID "/cpu.cfs_quota_us", "50000");
        place(&cg, "77", -EBADF, 3); /* pids, memory, cpu */
        expect(t, "pids/b4box/" ID "/cgroup.procs", "77");
        expect(t, "memory/b4box/" ID "/cgroup.procs", "77");
        expect(t, "cpu/b4box/" ID "/cgroup.procs", "77");
        cgroup_close(&cg);
        cgroup_host_release(&h);
        b4_test_rmrf(t);
        free(t);
}

/* Hybrid: the commands' own cgroups go in the unified hierarchy when it offers cgroup.kill;
 * the limits stay on v1. Without cgroup.kill (an older kernel) nothing is left there and the
 * commands' cgroups stay v1. */
static void test_cgroup_hybrid_fake_tree(void **state)
{
        char *t = b4_test_tmpdir(), name[32];
        struct cgroup_host h;
        struct cgroup cg;
        struct cgroup_limits lim = { .memory_bytes = 1u << 20, .cpus = 0.5, .pids = 7 };
        int fd = -EBADF, cfd = -EBADF;
        uint32_t flags = 0;

        mk_v1_tree(t);
        mk(t, "unified/b4box");
        mk(t, "unified/b4box/" ID);
        put(t, "unified/b4box/" ID "/cgroup.procs", "");
        put(t, "unified/b4box/" ID "/cgroup.kill", "");
        cgroup_host_probe(open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC), &h);
        assert_int_equal(h.mode, CGROUP_V1);
        assert_true(h.unified_fd >= 0);
        assert_int_equal(cgroup_create(&h, ID, &lim, &cg, NULL), 0);
        expect(t, "pids/b4box/" ID "/pids.max", "7");
        expect(t, "memory/b4box/" ID "/memory.limit_in_bytes", "1048576");
        place(&cg, "77", -EBADF, 4); /* the keeper in both: it writes all four */
        expect(t, "pids/b4box/" ID "/cgroup.procs", "77");
        expect(t, "cpu/b4box/" ID "/cgroup.procs", "77");
        expect(t, "unified/b4box/" ID "/cgroup.procs", "77");
        assert_int_equal(cgroup_exec_parent(&h, ID, &fd, &flags), 0);
        assert_int_equal(flags, KEEPER_CG_KILL);
        assert_int_equal(cgroup_exec_create(fd, name, &cfd), 0);
        char rel[128];
        (void)snprintf(rel, sizeof(rel), "unified/b4box/" ID "/%s", name);
        assert_true(exists(t, rel));
        cgroup_exec_remove(fd, name, false);
        assert_false(exists(t, rel));
        cfd = safe_close(cfd);
        fd = safe_close(fd);
        cgroup_close(&cg);

        /* no cgroup.kill in a fresh unified dir: it goes again, the commands' cgroups are v1 */
        static const char *const other = "fedcba9876543210fedcba9876543210fedcba98";
        struct cgroup_limits none = { 0 };
        assert_int_equal(cgroup_create(&h, other, &none, &cg, NULL), 0);
        assert_true(cg.unified_fd < 0);
        (void)snprintf(rel, sizeof(rel), "unified/b4box/%s", other);
        assert_false(exists(t, rel));
        assert_int_equal(cgroup_exec_parent(&h, other, &fd, &flags), 0);
        assert_int_equal(flags, 0); /* the pids hierarchy: no freezer here */
        assert_int_equal(cgroup_exec_create(fd, name, &cfd), 0);
        (void)snprintf(rel, sizeof(rel), "pids/b4box/%s/%s", other, name);
        assert_true(exists(t, rel));
        safe_close(cfd);
        safe_close(fd);
        cgroup_close(&cg);
        cgroup_host_release(&h);
        b4_test_rmrf(t);
        free(t);
}

static void test_cgroup_none(void **state)
{
        char *t = b4_test_tmpdir();
        struct cgroup_host h;
        struct cgroup cg;
        struct cgroup_limits lim = { .pids = 1 };

        cgroup_host_probe(open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC), &h);
        assert_int_equal(h.mode, CGROUP_NONE);
        assert_int_equal(cgroup_create(&h, ID, &lim, &cg, NULL), 0);
        assert_true(cgroup_is_empty(&cg));
        cgroup_host_release(&h);
        b4_test_rmrf(t);
        free(t);
}

static void test_capture_head_tail(void **state)
{
        struct capture c;
        char *out = NULL;
        size_t len;
        bool trunc = false;

        assert_int_equal(capture_init(&c, 10), 0);
        capture_add(&c, "0123", 4);
        capture_add(&c, "456789abcdefghij", 16);
        assert_int_equal(capture_finish(&c, &out, &len, &trunc), 0);
        assert_true(trunc);
        assert_string_equal(out, "01234\n[... 10 bytes truncated ...]\nfghij");
        free(out);
        capture_release(&c);
        assert_int_equal(capture_init(&c, 10), 0);
        trunc = false;
        capture_add(&c, "short", 5);
        assert_int_equal(capture_finish(&c, &out, &len, &trunc), 0);
        assert_false(trunc);
        assert_string_equal(out, "short");
        free(out);
        capture_release(&c);
}

static bool plan_has(const struct mount_plan *p, enum child_op_type t, const char *dst_suffix)
{
        size_t n = strlen(dst_suffix);

        for (size_t i = 0; i < p->n_ops; i++) {
                const char *d = p->ops[i].dst;
                if (p->ops[i].type == t && d && strlen(d) >= n &&
                    strcmp(d + strlen(d) - n, dst_suffix) == 0)
                        return true;
        }
        return false;
}

/* The data of the tmpfs mounted on the plan's @dst_suffix, or NULL. */
static const char *tmpfs_data(const struct mount_plan *p, const char *dst_suffix)
{
        size_t n = strlen(dst_suffix);

        for (size_t i = 0; i < p->n_ops; i++) {
                const struct child_op *op = &p->ops[i];
                if (op->type == CHILD_OP_MOUNT && op->fstype && strcmp(op->fstype, "tmpfs") == 0 &&
                    op->dst && strlen(op->dst) >= n &&
                    strcmp(op->dst + strlen(op->dst) - n, dst_suffix) == 0)
                        return op->data;
        }
        return NULL;
}

static void test_mount_plan_host(void **state)
{
        struct mount_spec spec = { .stage = "/st",
                                   .image = "/",
                                   .host_image = true,
                                   .workspace = "/ws",
                                   .read_only_root = true,
                                   .network_lo_only = true };
        struct mount_plan p = { 0 };

        assert_int_equal(mount_plan_build(&spec, &p, NULL), 0);
        assert_true(plan_has(&p, CHILD_OP_MOUNT, "/st/etc"));
        assert_true(plan_has(&p, CHILD_OP_MOUNT, "/st/workspace"));
        assert_true(plan_has(&p, CHILD_OP_MOUNT, "/st/proc"));
        assert_true(plan_has(&p, CHILD_OP_MOUNT, "/st/tmp"));
        assert_true(plan_has(&p, CHILD_OP_MOUNT, "/st/dev/pts"));
        /* what `b4box check` says about them (NATIVE_TMPFS_SIZES, audit L5) */
        assert_string_equal(NATIVE_TMPFS_SIZES, "/tmp 256 MiB, /run 64 MiB, /dev/shm 64 MiB");
        assert_non_null(strstr(tmpfs_data(&p, "/st/tmp"), "size=256m"));
        assert_non_null(strstr(tmpfs_data(&p, "/st/run"), "size=64m"));
        assert_non_null(strstr(tmpfs_data(&p, "/st/dev/shm"), "size=64m"));
        if (access("/etc/shadow", F_OK) == 0)
                assert_true(plan_has(&p, CHILD_OP_MOUNT, "/st/etc/shadow"));
        assert_false(plan_has(&p, CHILD_OP_MOUNT, "/st/home"));
        assert_false(plan_has(&p, CHILD_OP_MOUNT, "/st/root"));
        assert_false(plan_has(&p, CHILD_OP_MOUNT, "/st/var"));
        assert_int_equal(p.ops[p.n_ops - 1].type, CHILD_OP_PIVOT);
        /* the root goes read-only right before the pivot */
        assert_int_equal(p.ops[p.n_ops - 2].type, CHILD_OP_MOUNT);
        assert_true(p.ops[p.n_ops - 2].flags & MS_RDONLY);
        mount_plan_release(&p);
}

static void test_identity(void **state)
{
        struct b4_policy a, b;
        char ia[65], ib[65];

        b4_policy_init(&a);
        b4_policy_init(&b);
        b.resources.timeout_ms = 5000; /* excluded from the identity */
        assert_int_equal(launch_identity("host", &a, ia), 0);
        assert_int_equal(launch_identity("host", &b, ib), 0);
        assert_string_equal(ia, ib);
        b.resources.memory_mb = 128;
        assert_int_equal(launch_identity("host", &b, ib), 0);
        assert_string_not_equal(ia, ib);
        assert_int_equal(launch_identity("dir:/x", &a, ib), 0);
        assert_string_not_equal(ia, ib);
}

#ifdef B4_FAULT_INJECTION

/* Every native helper that allocates, once; each must fail cleanly (ASan sees leaks). */
static void oom_scenario(void)
{
        struct mount_spec spec = { .stage = "/st",
                                   .image = "/",
                                   .host_image = true,
                                   .workspace = "/ws",
                                   .read_only_root = true };
        struct mount_plan p = { 0 };
        struct b4_policy pol;
        struct b4_env_var extra = { .name = (char *)"A", .value = (char *)"b" };
        struct capture c;
        char id[65], **env = NULL, *out = NULL;
        size_t len;
        bool trunc = false;

        if (mount_plan_build(&spec, &p, NULL) == 0)
                mount_plan_release(&p);
        b4_policy_init(&pol);
        if (b4_policy_set_env(&pol, "K", "v") == 0) {
                (void)launch_identity("host", &pol, id);
                if (native_build_env(NULL, &pol, &extra, 1, &env, NULL) == 0) {
                        for (char **e = env; *e; e++)
                                free(*e);
                        free(env);
                }
        }
        b4_policy_clear(&pol);
        if (capture_init(&c, 8) == 0) {
                capture_add(&c, "0123456789abcdef", 16);
                if (capture_finish(&c, &out, &len, &trunc) == 0)
                        free(out);
                capture_release(&c);
        }
}

static void test_oom(void **state)
{
        for (long i = 0; i < 20000; i++) {
                alloc_fail_after(i);
                oom_scenario();
                void *probe = b4_malloc(1);
                alloc_fail_after(-1);
                if (probe) {
                        free(probe);
                        assert_true(i > 10);
                        return;
                }
        }
        fail_msg("the scenario never completed");
}
#endif

/* ---- seccomp (audit M5): argument rules, checked in a child that loads the filter ---- */

static bool denied(long r)
{
        return r < 0 && errno == EPERM;
}

static bool persona_allowed(uint32_t v)
{
        return (v & ~(uint32_t)0x20008) == 0 || v == 0xffffffffu;
}

/* Every value is checked against the rule "bits within PER_LINUX32|UNAME26, or query". */
static int persona_case(uint32_t v)
{
        long r = syscall(SYS_personality, (unsigned long)v);

        if (denied(r) == persona_allowed(v))
                return -1;
        if (r >= 0 && v != 0xffffffffu)
                (void)syscall(SYS_personality, 0ul);
        return 0;
}

static int persona_checks(void)
{
        static const uint32_t edges[] = {
                0,          8,          0x20000,    0x20008,    0xffffffff, 1,          7,
                9,          0xf,        0x10,       0x18,       0x40000,    0x400000,   0x20009,
                0x2000f,    0x30000,    0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xfffffff7,
                0xfffdffff, 0xfffdfff7, 0xc0000000, 0x60008
        };
        uint32_t x = 12345;

        for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
                if (persona_case(edges[i]) < 0)
                        return -1;
        /* the kernel reads an unsigned int: bits above 31 cannot smuggle a value past */
        if (!denied(syscall(SYS_personality, 0x100000000ul | ADDR_NO_RANDOMIZE)))
                return -1;
        for (int i = 0; i < 200000; i++) {
                x = x * 1103515245u + 12345u;
                /* sparse values too: most set bits come from runs, like real flags */
                if (persona_case(i & 1 ? x : x & (x >> 7) & (x >> 13)) < 0)
                        return -1;
        }
        return 0;
}

static bool family_allowed(long f)
{
        return f == AF_UNIX || f == AF_INET || f == AF_INET6 || f == AF_NETLINK;
}

static int family_checks(void)
{
        static const long odd[] = { 46, 64, 255, 0x7fffffff, -1 };
        long fd;
        int sv[2];

        for (long f = 0; f < 64; f++) {
                fd = syscall(SYS_socket, f, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (denied(fd) == family_allowed(f))
                        return -1;
                if (fd >= 0)
                        (void)close((int)fd);
        }
        for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
                if (!denied(syscall(SYS_socket, odd[i], SOCK_STREAM, 0)))
                        return -1;
        /* the kernel reads an int; a family with bits above 31 is refused whatever they hide */
        if (!denied(syscall(SYS_socket, 0x100000000l | AF_VSOCK, SOCK_STREAM, 0)) ||
            !denied(syscall(SYS_socket, 0x100000000l | AF_INET, SOCK_STREAM, 0)))
                return -1;
        if (!denied(syscall(SYS_socketpair, (long)AF_VSOCK, SOCK_STREAM, 0, sv)) ||
            !denied(syscall(SYS_socketpair, (long)AF_PACKET, SOCK_DGRAM, 0, sv)))
                return -1;
        if (syscall(SYS_socketpair, (long)AF_UNIX, SOCK_STREAM, 0, sv) < 0)
                return -1;
        return 0;
}

static int load_filter_and_probe(void *arg)
{
        void *bpf = NULL;
        size_t len = 0;
        struct sock_fprog prog;
        char ldt[16];

        if (seccomp_build(&bpf, &len, NULL) < 0)
                return 10;
        prog = (struct sock_fprog){ .len = (unsigned short)(len / 8), .filter = bpf };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return 11;
        if (persona_checks() < 0)
                return 12;
        if (family_checks() < 0)
                return 13;
        if (!denied(syscall(SYS_io_uring_setup, 1l, NULL)) ||
            !denied(syscall(SYS_modify_ldt, 0l, ldt, sizeof(ldt))) ||
            !denied(syscall(SYS_kcmp, (long)getpid(), (long)getpid(), 0l, 0l, 0l)) ||
            !denied(syscall(SYS_set_mempolicy, 0l, NULL, 0l)))
                return 14;
        return 0;
}

static void test_seccomp_argument_rules(void **state)
{
        int status = 0;

        assert_int_equal(b4_test_in_child(load_filter_and_probe, NULL, &status), 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* The filter cache: written on first use, used when its key matches, never when it does
 * not (a changed policy, libseccomp or architecture) or when it is malformed. */
static void test_seccomp_cache(void **state)
{
        char dir[] = "/tmp/b4box-bpf-XXXXXX";
        void *built = NULL, *a = NULL, *b = NULL, *c = NULL;
        size_t built_len = 0, a_len = 0, b_len = 0, c_len = 0;
        char *text = NULL;
        size_t text_len = 0;
        int fd;

        assert_non_null(mkdtemp(dir));
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(seccomp_build(&built, &built_len, NULL), 0);

        /* first use compiles and caches: "<64 hex>\n" + the BPF */
        assert_int_equal(native_seccomp_filter(fd, &a, &a_len, NULL), 0);
        assert_int_equal(a_len, built_len);
        assert_memory_equal(a, built, built_len);
        assert_int_equal(read_file_at(fd, "seccomp.bpf", 1 << 20, &text, &text_len), 0);
        assert_int_equal(text_len, 65 + built_len);
        assert_memory_equal(text + 65, built, built_len);

        /* a cache under the right key is what a later call takes, not a new compile */
        memset(text + 65, 0, built_len);
        assert_int_equal(write_file_atomic_at(fd, "seccomp.bpf", text, text_len, 0600), 0);
        assert_int_equal(native_seccomp_filter(fd, &b, &b_len, NULL), 0);
        assert_int_equal(b_len, built_len);
        assert_memory_equal(b, text + 65, built_len);
        free(b);
        b = NULL;

        /* a cache under another key is not used: this one says "allow everything" */
        text[0] = text[0] == '0' ? '1' : '0';
        assert_int_equal(write_file_atomic_at(fd, "seccomp.bpf", text, text_len, 0600), 0);
        assert_int_equal(native_seccomp_filter(fd, &b, &b_len, NULL), 0);
        assert_int_equal(b_len, built_len);
        assert_memory_equal(b, built, built_len);

        /* a truncated one neither (its key is right, its length is not whole instructions) */
        assert_int_equal(write_file_atomic_at(fd, "seccomp.bpf", built, 0, 0600), 0);
        free(text);
        text = NULL;
        assert_int_equal(native_seccomp_filter(fd, &c, &c_len, NULL), 0);
        assert_memory_equal(c, built, built_len);
        assert_int_equal(read_file_at(fd, "seccomp.bpf", 1 << 20, &text, &text_len), 0);
        assert_int_equal(write_file_atomic_at(fd, "seccomp.bpf", text, text_len - 3, 0600), 0);
        free(c);
        c = NULL;
        assert_int_equal(native_seccomp_filter(fd, &c, &c_len, NULL), 0);
        assert_int_equal(c_len, built_len);
        assert_memory_equal(c, built, built_len);

        free(text);
        free(built);
        free(a);
        free(b);
        free(c);
        assert_int_equal(unlinkat(fd, "seccomp.bpf", 0), 0);
        close(fd);
        assert_int_equal(rmdir(dir), 0);
        (void)state;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_v2_fake_tree),
                cmocka_unit_test(test_cgroup_v1_fake_tree),
                cmocka_unit_test(test_cgroup_hybrid_fake_tree),
                cmocka_unit_test(test_cgroup_none),
                cmocka_unit_test(test_capture_head_tail),
                cmocka_unit_test(test_mount_plan_host),
                cmocka_unit_test(test_identity),
                cmocka_unit_test(test_seccomp_argument_rules),
                cmocka_unit_test(test_seccomp_cache),
#ifdef B4_FAULT_INJECTION
                cmocka_unit_test(test_oom),
#endif
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
