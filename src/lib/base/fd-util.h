/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <dirent.h>
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
/* Replace @name under @dirfd with @data atomically: a temporary file beside it (O_EXCL,
 * never through a symlink), fsync'ed, renamed over @name. Return: 0 or -errno. */
int write_file_atomic_at(int dirfd, const char *name, const void *data, size_t len, int mode);

/*
 * Open (creating it with @mode when missing) the directory @name under @dirfd (AT_FDCWD ok)
 * and verify it is one b4box can trust (audit M1): a real directory (a symlink is refused,
 * -ELOOP), owned by the effective uid (-EPERM), not writable by group or others (-EPERM).
 * On success *ret_fd is an O_DIRECTORY fd (caller closes). Return: 0 or -errno.
 */
int open_private_dir_at(int dirfd, const char *name, int mode, int *ret_fd);
/*
 * Whether every ancestor of the canonical absolute @path (not @path itself; a symlink on the
 * way is -ELOOP: pass realpath()'s answer) is safe to hold a private
 * directory: owned by root or the effective uid, and not writable by group or others unless
 * sticky (/tmp), as OpenSSH checks the path to authorized_keys. -EPERM names nothing; the
 * caller reports @path. Return: 0 or -errno.
 */
int check_parents_private(const char *path);

struct b4_error;
/*
 * Create (0700) or open the state dir @path (absolute) and verify it (audit M1): it and every
 * directory below it that b4box uses must be b4box's own, because a state dir another local
 * user could create or change first would let them plant workspaces and records. Refused
 * with one message that says what is wrong and what is required. *ret_fd: an O_DIRECTORY fd
 * of the verified directory; everything below is opened from it. Return: 0 or -errno.
 */
int state_dir_open(const char *path, int *ret_fd, struct b4_error *err);

/* cleanup_(closedirp) DIR *d: closedir() at scope exit; NULL ok. */
void closedirp(DIR **d);
