/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Umbrella header of libb4box. */

#include <stdbool.h>

#include "b4box/cancel.h"
#include "b4box/config.h"
#include "b4box/conformance.h"
#include "b4box/error.h"
#include "b4box/log.h"
#include "b4box/policy.h"
#include "b4box/provider.h"
#include "b4box/version.h"

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
