/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the files of hostnet share and nobody else sees. */

#include <stddef.h>
#include <stdint.h>

#include "hostnet.h"

struct nlmsghdr;

/* hostnet_claims_open() - the directory of the host-wide /30 claims net-<n> (/run/b4box, or
 * the run directory when /run is not writable). Return: an O_CLOEXEC fd, or -errno. */
int hostnet_claims_open(const struct hostnet *hn);

/*
 * hostnet_gone() - the teardown of a released thread's network (teardown.c): record what is
 * left of it — subnet @n, host veth @ifindex (0 when it is gone already), the elements
 * recorded in @elems (may be NULL) — as run/.netgone-<n>-<ifindex>, then delete it: before
 * returning when @wait, else in the background (a detached grandchild in a single-threaded
 * process, a detached thread otherwise). Done or not, the record outlives nothing it names:
 * hostnet_sweep() finishes what a crash interrupted.
 */
void hostnet_gone(
        const struct hostnet *hn, unsigned n, unsigned ifindex, const char *elems, bool wait);

/* nfnl_seq() - reserve @n consecutive sequence numbers for messages on the process's
 * netfilter socket. Return: the first. */
uint32_t nfnl_seq(unsigned n);

/*
 * nfnl_talk() - send the @len bytes at @buf (one request or one nf_tables batch, numbered
 * from nfnl_seq()) on the process's netfilter socket (nfnl-sock.c), then read the replies to
 * numbers @first..@last: @fn (may be NULL) gets each that is not an acknowledgement.
 * Thread-safe. Return: 0 when @want acknowledgements came and all said 0; the first
 * negative errno one carried; -EPROTO when one is missing; another negative errno.
 */
int nfnl_talk(const void *buf,
              size_t len,
              uint32_t first,
              uint32_t last,
              unsigned want,
              void (*fn)(const struct nlmsghdr *h, void *data),
              void *data);

/*
 * hostnet_record_write() - write @text as the record @name under @dirfd (atomically:
 * a temporary file renamed), prefixed with the line "boot <boot id>". Not fsync()ed: these
 * records describe kernel state (veths, elements, claims under /run) that no reboot keeps,
 * and a record of another boot is ignored. Return: 0 or a negative errno.
 */
int hostnet_record_write(int dirfd, const char *name, const char *text);

/* hostnet_record_body() - the text after @record's boot line; NULL when the record is from
 * another boot (or has no boot line): nothing it names exists any more. */
const char *hostnet_record_body(const char *record);
