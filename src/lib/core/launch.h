/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The keeper launch configuration and identity shared by the providers (reference §3.3). */

#include <stdbool.h>

#include "b4box/policy.h"

struct jv;

/* [[name, value], ...] sorted by name, HOME=/workspace when non-root; NULL on OOM. */
struct jv *launch_env_json(const struct b4_policy *p);
/* The launch configuration as compact JSON (heap). Return: 0 or -ENOMEM. */
int launch_config_json(const struct b4_policy *p, char **ret);
/* sha256 hex of {"image", "launchConfig"}: 64 hex + NUL. Return: 0 or -ENOMEM. */
int launch_identity(const char *image, const struct b4_policy *p, char ret[65]);
/* Whether a thread may run image @ref: @dflt exactly, or one of @patterns (NULL-terminated,
 * may be NULL) exactly or as an fnmatch(3) glob (sandbox.provider.images). */
bool launch_image_allowed(const char *dflt, char *const *patterns, const char *ref);
