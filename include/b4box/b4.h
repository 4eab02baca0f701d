/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Umbrella header of libb4box: every embedding header (all of include/b4box but the provider
 * implementer's provider-impl.h), nothing declared here. An embedder loads a config
 * (config.h), builds the provider it names (providers.h), opens the state store (state.h)
 * and runs threads through the runtime (runtime.h: runs, tools.h results, workspace reads
 * with inspect.h and bundle.h).
 */

#include "b4box/bundle.h"
#include "b4box/cancel.h"
#include "b4box/config.h"
#include "b4box/conformance.h"
#include "b4box/error.h"
#include "b4box/inspect.h"
#include "b4box/kube.h"
#include "b4box/log.h"
#include "b4box/policy.h"
#include "b4box/provider.h"
#include "b4box/providers.h"
#include "b4box/runtime.h"
#include "b4box/state.h"
#include "b4box/tools.h"
#include "b4box/version.h"
