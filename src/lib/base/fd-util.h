/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * Read at most @max bytes from @fd until EOF; a file holding more than @max bytes is refused
 * with -EFBIG after reading max + 1 bytes (never more). STRBUF_UNLIMITED = no cap.
 * On success *ret is a NUL-terminated heap buffer (caller frees) and *ret_len its length.
 * Return: 0, -EFBIG, -ENOMEM, -errno from read().
 */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* Write all of @data, retrying on EINTR and short writes. Return: 0 or -errno. */
int write_all(int fd, const void *data, size_t len);
/* Read a whole small file at @path relative to @dirfd (AT_FDCWD ok), capped at @max. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
/* Write @s to an existing file (cgroup/proc knobs). Return: 0 or -errno. */
int write_string_at(int dirfd, const char *path, const char *s);
