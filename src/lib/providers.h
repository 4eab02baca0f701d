/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Constructors of the built-in providers; the registry (providers.c) picks one by type. */

#include "b4box/config.h"
#include "b4box/provider.h"

/* Each copies what it keeps from @cfg. Return: 0, -EINVAL (bad option, message set), -ENOMEM. */
int fake_provider_new(const struct b4_provider_config *cfg,
                      struct b4_provider **ret,
                      struct b4_error *err);
int native_provider_new(const struct b4_provider_config *cfg,
                        struct b4_provider **ret,
                        struct b4_error *err);
int docker_provider_new(const struct b4_provider_config *cfg,
                        struct b4_provider **ret,
                        struct b4_error *err);
int kube_provider_new(const struct b4_provider_config *cfg,
                      struct b4_provider **ret,
                      struct b4_error *err);
