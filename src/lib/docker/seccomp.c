/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keeper's seccomp profile: core's syscall policy (core/syscall-policy.c, the one
 * definition native's BPF is compiled from too) as a Docker profile, passed as
 * HostConfig.SecurityOpt "seccomp=<json>" in place of Docker's default.
 *
 * Docker's default is an allow list, ours a deny list. So that the replacement allows
 * nothing Docker's default denies, and no syscall newer than this build is allowed, the
 * profile is an allow list too: default errno(EPERM), then every syscall libseccomp knows
 * for the native architecture minus the policy's denied and conditional ones; socket,
 * socketpair, personality and clone are allowed only with the policy's argument values;
 * clone3 answers ENOSYS; the denied ones are listed as errno(EPERM), so that runc's ENOSYS
 * stub for numbers above the profile's highest cannot change their errno. Only the native
 * architecture is listed: i386 and x32 calls are refused, as in native.
 */

#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "core/syscall-policy.h"
#include "docker/docker.h"
#include "json/json.h"

/* Above every syscall number of the architectures below (x86_64 and aarch64 end near 470). */
#define SYSCALL_NR_END 4096

/* Architectures whose clone() takes its flags in argument 0 (not s390x). */
static const struct {
        uint32_t token;
        const char *name;
} arches[] = {
        { SCMP_ARCH_X86_64, "SCMP_ARCH_X86_64" },
        { SCMP_ARCH_AARCH64, "SCMP_ARCH_AARCH64" },
};

static const char *arch_name(uint32_t token)
{
        for (size_t i = 0; i < ELEMENTSOF(arches); i++)
                if (arches[i].token == token)
                        return arches[i].name;
        return NULL;
}

/* Calls the profile allows only with some arguments, or answers otherwise. */
static bool conditional(const char *name)
{
        const struct syscall_policy *sp = syscall_policy();

        for (size_t i = 0; i < sp->n_family_calls; i++)
                if (strcmp(sp->family_calls[i], name) == 0)
                        return true;
        return strcmp(name, "personality") == 0 || strcmp(name, "clone") == 0 ||
               strcmp(name, sp->enosys_call) == 0;
}

/* {"names": [...], "action": ...[, "errnoRet": e]}, names taking @names' reference. */
static struct jv *entry(struct jv *names, const char *action, int errno_ret)
{
        bool lost = false;
        struct jv *o = jv_pack("{s:o, s:s, s:o*}", "names", names, "action", action, "errnoRet",
                               jv_opt(errno_ret, jv_integer_new(errno_ret), &lost));

        return lost ? jv_unref(o) : o;
}

static struct jv *names_of(const char *const *v, size_t n)
{
        cleanup_(jv_unrefp) struct jv *a = jv_array_new();

        for (size_t i = 0; a && i < n; i++)
                if (jv_array_append_new(a, jv_string_new(v[i])) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* The entry allowing @names when argument 0 compares @op to (@value, @value_two). */
static struct jv *allow_if(struct jv *names, const char *op, uint64_t value, uint64_t value_two)
{
        return jv_pack("{s:o, s:s, s:[{s:i, s:I, s:I, s:s}]}", "names", names, "action",
                       "SCMP_ACT_ALLOW", "args", "index", 0, "value", (int64_t)value, "valueTwo",
                       (int64_t)value_two, "op", op);
}

/* Every syscall of @arch libseccomp knows that is neither denied nor conditional (@allow),
 * and the denied ones the architecture has (@deny), in number order. */
static int split_syscalls(uint32_t arch, struct jv *allow, struct jv *deny)
{
        int r = 0;

        for (int nr = 0; r >= 0 && nr < SYSCALL_NR_END; nr++) {
                cleanup_free char *name = seccomp_syscall_resolve_num_arch(arch, nr);
                if (!name || conditional(name))
                        continue;
                r = jv_array_append_new(syscall_policy_denies(name) ? deny : allow,
                                        jv_string_new(name));
        }
        return r;
}

static int add_family_entries(struct jv *calls)
{
        const struct syscall_policy *sp = syscall_policy();
        int r = 0;

        for (size_t i = 0; r >= 0 && i < sp->n_families; i++)
                r = jv_array_append_new(calls,
                                        allow_if(names_of(sp->family_calls, sp->n_family_calls),
                                                 "SCMP_CMP_EQ", sp->families[i], 0));
        return r;
}

static int add_persona_entries(struct jv *calls)
{
        uint32_t v[64];
        size_t n = syscall_policy_persona_values(v, ELEMENTSOF(v));
        int r = 0;

        if (n > ELEMENTSOF(v))
                return -E2BIG;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = jv_array_append_new(
                        calls, allow_if(jv_pack("[s]", "personality"), "SCMP_CMP_EQ", v[i], 0));
        return r;
}

/* clone() when (flags & every namespace flag) == 0; clone3 answers ENOSYS. */
static int add_clone_entries(struct jv *calls)
{
        const struct syscall_policy *sp = syscall_policy();
        int r;

        r = jv_array_append_new(calls, allow_if(jv_pack("[s]", "clone"), "SCMP_CMP_MASKED_EQ",
                                                syscall_policy_clone_ns_mask(), 0));
        if (r >= 0)
                r = jv_array_append_new(calls, entry(jv_pack("[s]", sp->enosys_call),
                                                     "SCMP_ACT_ERRNO", sp->enosys_errno));
        return r;
}

static struct jv *syscalls_json(uint32_t arch)
{
        cleanup_(jv_unrefp) struct jv *calls = jv_array_new();
        cleanup_(jv_unrefp) struct jv *allow = jv_array_new();
        cleanup_(jv_unrefp) struct jv *deny = jv_array_new();
        int r;

        if (!calls || !allow || !deny || split_syscalls(arch, allow, deny) < 0)
                return NULL;
        r = jv_array_append_new(calls, entry(TAKE_PTR(allow), "SCMP_ACT_ALLOW", 0));
        if (r >= 0)
                r = jv_array_append_new(calls, entry(TAKE_PTR(deny), "SCMP_ACT_ERRNO",
                                                     syscall_policy()->deny_errno));
        if (r >= 0)
                r = add_family_entries(calls);
        if (r >= 0)
                r = add_persona_entries(calls);
        if (r >= 0)
                r = add_clone_entries(calls);
        return r < 0 ? NULL : TAKE_PTR(calls);
}

int docker_seccomp_profile(struct jv **ret)
{
        uint32_t arch = seccomp_arch_native();
        const char *name = arch_name(arch);
        struct jv *o;

        if (!name)
                return -EAFNOSUPPORT;
        o = jv_pack("{s:s, s:i, s:[s], s:o}", "defaultAction", "SCMP_ACT_ERRNO", "defaultErrnoRet",
                    syscall_policy()->deny_errno, "architectures", name, "syscalls",
                    syscalls_json(arch));
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

int docker_seccomp_opt(char **ret_opt, char ret_digest[65])
{
        cleanup_(jv_unrefp) struct jv *profile = NULL;
        cleanup_free char *json = NULL;
        int r;

        r = docker_seccomp_profile(&profile);
        if (r >= 0)
                r = jv_dump(profile, 0, &json);
        if (r < 0)
                return r;
        if (b4_asprintf(ret_opt, "seccomp=%s", json) < 0)
                return -ENOMEM;
        sha256_hex(json, strlen(json), ret_digest);
        return 0;
}
