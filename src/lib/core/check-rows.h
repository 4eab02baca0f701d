/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The check rows as JSON, for the two places that print them: `b4box check --json` and
 * GET /threads/{id}/check (b4_preflight_apply_policy() in b4box/provider.h makes the rows). */

#include "b4box/provider.h"

#include "json/json.h"

/* [{name, state, detail}] of @pf's controls, state as b4_enforcement_name(). NULL on OOM. */
struct jv *check_rows_json(const struct b4_preflight *pf);
