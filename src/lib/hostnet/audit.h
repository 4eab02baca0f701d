/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A listed thread's network audit (docs/native.md §Audit), as its b4box-netd serves it on a
 * unix socket in the provider's run directory: the DNS events and totals netd keeps, and
 * the per-destination and denial counters of the `inet b4box` table, read when asked.
 */

#include <stddef.h>

#include "b4box/error.h"

#include "hostnet.h"

#define HOSTNET_AUDIT_NAME_LEN 32
#define HOSTNET_AUDIT_MAX      (2u << 20) /* an answer larger than this is refused */

/* hostnet_audit_name() - the socket's name in the run directory for thread @id: "a-" and
 * 24 hex of SHA-256(@id) and ".sock" (a thread id may be longer than a socket path). */
void hostnet_audit_name(const char *id, char ret[HOSTNET_AUDIT_NAME_LEN]);

/*
 * hostnet_audit_read() - thread @id's audit document from its netd (JSON text; netd's shape,
 * docs/native.md §Audit). *@ret is new, NUL-terminated, *@ret_len bytes; the caller frees
 * it. Waits at most 2 s. Return: 0; -ENOENT when the thread has no netd (no list, not
 * acquired, released); -EIO (netd did not answer, or not a whole document; message in
 * @err); -ENOMEM.
 */
int hostnet_audit_read(const struct hostnet *hn,
                       const char *id,
                       char **ret,
                       size_t *ret_len,
                       struct b4_error *err);
