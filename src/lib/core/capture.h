/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Capped capture of one stream: the head and the tail, with the count of dropped bytes. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capture {
        size_t cap; /* total bytes kept */
        char *head; /* first cap - cap/2 bytes */
        size_t head_len;
        char *tail; /* ring of cap/2 bytes */
        size_t tail_len, tail_pos;
        uint64_t dropped;
};

/* Return: 0 or -ENOMEM. */
int capture_init(struct capture *c, size_t cap);
void capture_add(struct capture *c, const char *p, size_t n);
/* Count @n bytes that passed unseen (a remote end dropped them between the head and the
 * tail it kept, e.g. b4box-agent): the caller then adds that tail. */
void capture_skip(struct capture *c, uint64_t n);
/* Head + marker + tail as one owned NUL-terminated string; sets *truncated when bytes were
 * dropped (never clears it). Return: 0 or -ENOMEM. */
int capture_finish(struct capture *c, char **ret, size_t *ret_len, bool *truncated);
void capture_release(struct capture *c);
