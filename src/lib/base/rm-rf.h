/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * rm_rf_at() - remove @name under @dirfd and everything below it, never following a symlink
 * and never crossing a mount, whatever the depth (rm-rf.c says how). A missing @name is
 * success. Return: 0 or -errno.
 */
int rm_rf_at(int dirfd, const char *name);
