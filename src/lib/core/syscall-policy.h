/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The sandbox's syscall policy, one definition for every provider: native compiles it with
 * libseccomp to BPF (native/seccomp.c), docker turns it into a seccomp profile
 * (docker/seccomp.c). Plain data and small accessors; no libseccomp here.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct syscall_policy {
        /* denied with deny_errno whatever the arguments; names absent on an architecture
         * are skipped there */
        const char *const *denied;
        size_t n_denied;
        /* the calls whose argument 0 is an address family (socket, socketpair) and the
         * families they may use, sorted; every other value of argument 0 is denied */
        const char *const *family_calls;
        size_t n_family_calls;
        const unsigned int *families;
        size_t n_families;
        /* personality(v) is allowed when v's bits lie within persona_bits (no two of them
         * adjacent) or v == persona_query; the kernel reads an unsigned int */
        uint32_t persona_bits;
        uint32_t persona_query;
        /* clone() with any of these flags in argument 0 is denied */
        const uint64_t *clone_ns_flags;
        size_t n_clone_ns_flags;
        /* answered enosys_errno, so libc falls back to clone(), whose flags are visible */
        const char *enosys_call;
        int enosys_errno;
        int deny_errno;
};

const struct syscall_policy *syscall_policy(void);
/* The union of clone_ns_flags. */
uint64_t syscall_policy_clone_ns_mask(void);
/* The personality values allowed, ascending (every subset of persona_bits, then the query)
 * into @out (room for @n); returns how many there are, even when more than @n. */
size_t syscall_policy_persona_values(uint32_t *out, size_t n);
/* Is @name one of the unconditionally denied calls? */
bool syscall_policy_denies(const char *name);
