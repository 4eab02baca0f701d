/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the files of hostnet share and nobody else sees. */

#include "hostnet.h"

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
