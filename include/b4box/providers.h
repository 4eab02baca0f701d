/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The providers built into this library (native, docker, fake): the one a config names. */

#include <stdbool.h>

#include "b4box/config.h"
#include "b4box/error.h"

struct b4_provider;

/**
 * b4_provider_new() - construct the provider @cfg names
 * @cfg: borrowed; what the provider keeps is copied
 * @ret: owned by the caller (b4_provider_free())
 * Return: 0, -EINVAL (bad option), -EOPNOTSUPP (type not built in), -ENOMEM.
 */
B4_PUBLIC int b4_provider_new(const struct b4_provider_config *cfg,
                              struct b4_provider **ret,
                              struct b4_error *err);
/* Whether this build has the provider @type (b4_provider_new() would not say -EOPNOTSUPP). */
B4_PUBLIC bool b4_provider_available(const char *type);
