/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by store.c and import.c. */

#include <stdbool.h>

#include "base/hash.h"
#include "image.h"

#define IMAGE_CONFIG_MAX (4u * 1024 * 1024) /* an image config or manifest blob */

bool image_hex_valid(const char *s);
/* @ref with ":latest" added when it has neither tag nor digest; *@ret is heap.
 * Return: 0, -EINVAL (malformed), -ENOMEM. */
int image_ref_normalize(const char *ref, char **ret);
/* <state>/images (@sub NULL) or <state>/images/<sub>, made when missing. */
int image_dir(const char *state_dir, const char *sub, int *ret_fd);
/* The file name of @ref (normalized) under refs/. */
void image_ref_file(const char *ref, char ret[SHA256_HEX_LEN + 1]);
