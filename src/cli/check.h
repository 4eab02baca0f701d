/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `b4box check`: what one run collects. A refusal is what start-up or a first run would
 * refuse; text mode prints it at once as "b4box: <message>", --json keeps it for the document.
 */

#include <stdbool.h>

#include "b4box/b4.h"

struct check {
        bool json;       /* --json: print nothing but the document */
        bool strict;     /* --strict: a NOT ENFORCED control exits CLI_EXIT_STRICT */
        char **refusals; /* owned strv, in the order found */
        bool out_of_memory;
};

/* Record (and in text mode print) one refusal. */
void check_refuse(struct check *c, const char *fmt, ...) B4_PRINTF(2, 3);

/* threadAccess principals: a token file is readable and at least 16 characters, a token
 * variable is set (src/server/access.c refuses the same at start-up). */
void check_tokens(struct check *c, const struct b4_config *cfg);
/* The resolver programs (sandbox.thread / sandbox.workspace) and the policy program
 * (threadAccess.command) exist and are executable. */
void check_resolvers(struct check *c, const struct b4_config *cfg);
/* Per-thread images need a provider that resolves images; on docker every exact image the
 * config names must exist in the daemon. Call after a successful preflight. */
void check_images(struct check *c, const struct b4_config *cfg, struct b4_provider *p);
