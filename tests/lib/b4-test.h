/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* cmocka.h needs these first. */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

/*
 * Test helpers for cmocka binaries: a private temp dir, running a body in a forked child
 * (for tests that change process state), and environment probes for skips.
 */

/* Create a fresh directory under $TMPDIR (or /tmp); caller frees and removes it. */
char *b4_test_tmpdir(void);
/* rm -rf @path without following symlinks. */
void b4_test_rmrf(const char *path);
/* Run @fn(@arg) in a forked child; its return value becomes the exit status. */
int b4_test_in_child(int (*fn)(void *arg), void *arg, int *ret_status);
bool b4_test_is_root(void);
/* Write @len bytes to @path (created 0644). Return: 0 or -errno. */
int b4_test_write(const char *path, const char *data);
