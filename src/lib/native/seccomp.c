/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's syscall filter: core's syscall policy (core/syscall-policy.c, the one
 * definition docker's profile is made from too) compiled once with libseccomp to raw BPF;
 * the keeper loads that BPF in each command just before execve. Default allow, the policy's
 * denials as rules. Foreign ABIs (i386, x32) kill the process: only the native architecture
 * is in the filter. Compiling costs ~0.6 ms, a good part of a warm local `b4box exec`, so the
 * result is kept in the private state dir, under the key of everything it is made from (the
 * policy's data, libseccomp's version, the architecture, and the file this code was loaded
 * from: the rules are code too) and used only when the key matches.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "core/syscall-policy.h"
#include "native.h"

static void seccomp_releasep(scmp_filter_ctx *c)
{
        if (*c)
                seccomp_release(*c);
}

/* SCMP_A0() with one datum leaves datum_b to the compiler's zero; say it (clang warns). */
static struct scmp_arg_cmp arg0(enum scmp_compare op, scmp_datum_t a, scmp_datum_t b)
{
        return (struct scmp_arg_cmp){ .arg = 0, .op = op, .datum_a = a, .datum_b = b };
}

static uint32_t deny(void)
{
        return SCMP_ACT_ERRNO((uint32_t)syscall_policy()->deny_errno);
}

/* A call of the policy by name; -ENOENT when this architecture has none. */
static int resolve(const char *name)
{
        int nr = seccomp_syscall_resolve_name(name);

        return nr == __NR_SCMP_ERROR ? -ENOENT : nr;
}

/* socket()/socketpair() with a family outside the allowed ones: each gap below the last
 * allowed family one by one, then everything above it. The compares are 64-bit: a value with
 * any bit above 31 set (which the kernel would truncate to an int) is denied too. */
static int add_family_rules(scmp_filter_ctx ctx, int nr)
{
        const struct syscall_policy *sp = syscall_policy();
        unsigned int last = sp->families[sp->n_families - 1];
        size_t k = 0;
        int r;

        for (unsigned int f = 0; f < last; f++) {
                if (f == sp->families[k]) {
                        k++;
                        continue;
                }
                r = seccomp_rule_add(ctx, deny(), nr, 1, arg0(SCMP_CMP_EQ, f, 0));
                if (r < 0)
                        return r;
        }
        return seccomp_rule_add(ctx, deny(), nr, 1, arg0(SCMP_CMP_GT, last, 0));
}

/*
 * personality(v) is denied unless v's bits are within the policy's persona_bits or v is the
 * query 0xffffffff. A rule may compare an argument once, so the denied set is covered by
 * single masked compares "bit a set, bit b clear", a outside the allowed bits: with b = a + 1
 * (mod 32) for every such a, plus (c - 1, c + 1) for each allowed bit c, for a run of ones
 * that ends on an allowed bit. Any denied v has a run of ones holding a disallowed bit; the
 * bit above that run is clear (v is not all ones), so one of these pairs matches (no two
 * allowed bits are adjacent, so a run ending on c holds c - 1). No allowed v matches: the
 * query has no clear bit, the others have no disallowed bit set. The masks cover bits 0-31
 * only, so bits above them are ignored, as the kernel (unsigned int) does.
 */
static int add_persona_rule(scmp_filter_ctx ctx, unsigned int a, unsigned int b)
{
        uint32_t set = 1u << a, mask = set | 1u << b;

        return seccomp_rule_add(ctx, deny(), SCMP_SYS(personality), 1,
                                SCMP_A0_32(SCMP_CMP_MASKED_EQ, mask, set));
}

static int add_persona_rules(scmp_filter_ctx ctx)
{
        uint32_t allowed = syscall_policy()->persona_bits;
        int r = 0;

        if (syscall_policy()->persona_query != 0xffffffffu || allowed & (allowed << 1 | 1u) ||
            allowed >> 31)
                return -EINVAL; /* the cover above assumes these */
        for (unsigned int a = 0; r >= 0 && a < 32; a++) {
                if (!(allowed & 1u << a))
                        r = add_persona_rule(ctx, a, (a + 1) % 32);
                else
                        r = add_persona_rule(ctx, a - 1, a + 1);
        }
        return r;
}

static int add_denied(scmp_filter_ctx ctx)
{
        const struct syscall_policy *sp = syscall_policy();
        int nr, r;

        for (size_t i = 0; i < sp->n_denied; i++) {
                nr = resolve(sp->denied[i]);
                if (nr == -ENOENT)
                        continue; /* not on this architecture */
                r = seccomp_rule_add(ctx, deny(), nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_rules(scmp_filter_ctx ctx)
{
        const struct syscall_policy *sp = syscall_policy();
        int nr, r;

        r = add_denied(ctx);
        for (size_t i = 0; r >= 0 && i < sp->n_clone_ns_flags; i++)
                r = seccomp_rule_add(
                        ctx, deny(), SCMP_SYS(clone), 1,
                        arg0(SCMP_CMP_MASKED_EQ, sp->clone_ns_flags[i], sp->clone_ns_flags[i]));
        for (size_t i = 0; r >= 0 && i < sp->n_family_calls; i++) {
                nr = resolve(sp->family_calls[i]);
                r = nr < 0 ? nr : add_family_rules(ctx, nr);
        }
        if (r >= 0)
                r = add_persona_rules(ctx);
        if (r < 0)
                return r;
        nr = resolve(sp->enosys_call);
        return nr < 0 ? nr
                      : seccomp_rule_add(ctx, SCMP_ACT_ERRNO((uint32_t)sp->enosys_errno), nr, 0);
}

static int export_bpf(scmp_filter_ctx ctx, void **ret, size_t *ret_len)
{
        cleanup_close int fd = memfd_create("b4box-seccomp", MFD_CLOEXEC);
        char *buf = NULL;
        size_t len;
        int r;

        if (fd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = read_full_fd(fd, 1u << 20, &buf, &len);
        if (r < 0)
                return r;
        if (len == 0 || len % 8 != 0) {
                free(buf);
                return -EPROTO;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

int seccomp_build(void **ret_bpf, size_t *ret_len, struct b4_error *err)
{
        cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        int r;

        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return b4_error_set(err, -ENOMEM, "cannot create the seccomp filter");
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r >= 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r >= 0)
                r = add_rules(ctx);
        if (r >= 0)
                r = export_bpf(ctx, ret_bpf, ret_len);
        if (r < 0)
                return b4_error_set(err, r, "cannot build the seccomp filter");
        return 0;
}

/* ---- the cache ---- */

#define CACHE_NAME "seccomp.bpf"
#define CACHE_TAG  "b4box-seccomp-bpf 1\n"
#define CACHE_MAX  (1u << 20)

static void hash_strings(struct sha256_ctx *c, const char *const *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                sha256_update(c, v[i], strlen(v[i]) + 1);
        sha256_update(c, "\n", 1);
}

struct code_object {
        uintptr_t addr;
        const char *name; /* "" for the main program */
};

static int find_code_object(struct dl_phdr_info *info, size_t size, void *data)
{
        struct code_object *o = data;

        for (size_t i = 0; i < info->dlpi_phnum; i++) {
                const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
                uintptr_t start = info->dlpi_addr + ph->p_vaddr;

                if (ph->p_type == PT_LOAD && o->addr >= start && o->addr - start < ph->p_memsz) {
                        o->name = info->dlpi_name ? info->dlpi_name : "";
                        return 1;
                }
        }
        (void)size;
        return 0;
}

/* The file this code was loaded from (the executable, or libb4box.so): the rules are code
 * as well as data, so a cached filter is good only for the build that made it. */
static int code_identity(struct stat *ret)
{
        struct code_object o = { .addr = (uintptr_t)(void *)code_identity };
        const char *file;

        if (dl_iterate_phdr(find_code_object, &o) == 0 || !o.name)
                return -ENOENT;
        file = o.name[0] ? o.name : "/proc/self/exe"; /* the main program has no name */
        if (file[0] != '/')
                return -ENOENT;
        return stat(file, ret) < 0 ? -errno : 0;
}

/* Everything the filter is compiled from, hashed. Return: 0, -ENOMEM, or -ENOENT when the
 * code's own file cannot be told (no cache then). */
static int filter_key(char ret[SHA256_HEX_LEN + 1])
{
        const struct syscall_policy *sp = syscall_policy();
        const struct scmp_version *v = seccomp_version();
        struct sha256_ctx *c;
        char nums[256];
        struct stat st;
        int n;

        if (code_identity(&st) < 0)
                return -ENOENT;
        c = sha256_new();
        if (!c)
                return -ENOMEM;
        n = snprintf(nums, sizeof(nums),
                     "%s%u.%u.%u arch %" PRIu32 " persona %" PRIu32 "/%" PRIu32 " errno %d/%d\n"
                     "code %ju:%ju %jd %jd.%09ld\n",
                     CACHE_TAG, v ? v->major : 0, v ? v->minor : 0, v ? v->micro : 0,
                     (uint32_t)SCMP_ARCH_NATIVE, sp->persona_bits, sp->persona_query,
                     sp->deny_errno, sp->enosys_errno, (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                     (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        sha256_update(c, nums, (size_t)n);
        hash_strings(c, sp->denied, sp->n_denied);
        hash_strings(c, sp->family_calls, sp->n_family_calls);
        hash_strings(c, &sp->enosys_call, 1);
        sha256_update(c, sp->families, sp->n_families * sizeof(*sp->families));
        sha256_update(c, sp->clone_ns_flags, sp->n_clone_ns_flags * sizeof(*sp->clone_ns_flags));
        sha256_final_hex(c, ret);
        return 0;
}

/* The cached filter when its key is @key: "<key>\n" then the BPF. */
static int cache_read(int dir_fd, const char *key, void **ret, size_t *ret_len)
{
        cleanup_close int fd = openat(dir_fd, CACHE_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        cleanup_free char *buf = NULL;
        size_t len, head = SHA256_HEX_LEN + 1;
        int r;

        if (fd < 0)
                return -errno;
        r = read_full_fd(fd, CACHE_MAX, &buf, &len);
        if (r < 0)
                return r;
        if (len <= head || (len - head) % 8 != 0 || memcmp(buf, key, SHA256_HEX_LEN) != 0 ||
            buf[SHA256_HEX_LEN] != '\n')
                return -ESTALE;
        *ret = b4_memdup(buf + head, len - head);
        if (!*ret)
                return -ENOMEM;
        *ret_len = len - head;
        return 0;
}

static void cache_write(int dir_fd, const char *key, const void *bpf, size_t len)
{
        cleanup_free char *buf = b4_malloc(SHA256_HEX_LEN + 1 + len);

        if (!buf)
                return; /* the cache is an optimisation: the filter itself stands */
        memcpy(buf, key, SHA256_HEX_LEN);
        buf[SHA256_HEX_LEN] = '\n';
        memcpy(buf + SHA256_HEX_LEN + 1, bpf, len);
        (void)write_file_atomic_at(dir_fd, CACHE_NAME, buf, SHA256_HEX_LEN + 1 + len, 0600);
}

int native_seccomp_filter(int dir_fd, void **ret_bpf, size_t *ret_len, struct b4_error *err)
{
        char key[SHA256_HEX_LEN + 1];
        int r;

        r = filter_key(key);
        if (r == -ENOMEM)
                return b4_error_set(err, r, "out of memory");
        if (r >= 0 && cache_read(dir_fd, key, ret_bpf, ret_len) >= 0)
                return 0;
        int built = seccomp_build(ret_bpf, ret_len, err);
        if (built >= 0 && r >= 0)
                cache_write(dir_fd, key, *ret_bpf, *ret_len);
        return built;
}
