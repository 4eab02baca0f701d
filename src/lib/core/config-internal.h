/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals of the b4box.json loader. A struct cfg collects refusals while the block parsers
 * walk the document; a parser never stops at the first problem, so the user sees them all.
 * Block parsers take the JSON value (borrowed) and fill their part of struct b4_config.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/config.h"

#include "config-answer.h"
#include "json/json.h"

#define CFG_GOT_MAX   160 /* bytes of a value quoted in a "(got: ...)" */
#define CFG_GOT_SLOTS 4
#define CFG_PATH_MAX  512

/* Limits of reference §2.4, applied to every env map and permission list. */
#define CFG_MAX_ENV        256
#define CFG_MAX_ENV_NAME   256
#define CFG_MAX_ENV_VALUE  32768
#define CFG_MAX_TOOLS      64
#define CFG_MAX_TOOL_NAME  256
#define CFG_MAX_PATTERNS   1024
#define CFG_MAX_PATTERN    4096
#define CFG_MAX_ENTRIES    10000 /* workspace inventory entries */
#define CFG_MAX_PATH       1024
#define CFG_MAX_ARGV       256
#define CFG_MAX_TARGETS    1024
#define CFG_MAX_PRINCIPALS 64
#define CFG_MAX_STRING     4096 /* any other string value */
#define CFG_MAX_IMAGE      512

struct cfg {
        char **errors; /* collected refusals */
        size_t n_errors;
        size_t n_dropped; /* refusals past B4_CONFIG_MAX_ERRORS */
        int r;            /* first hard failure (-ENOMEM), 0 otherwise */
        const char *base_dir;
        char got[CFG_GOT_SLOTS][CFG_GOT_MAX + 8];
        unsigned got_next;
};

/* Record one refusal (the full message). Out of memory sets c->r. */
void cfg_refuse(struct cfg *c, const char *fmt, ...) B4_PRINTF(2, 3);
/* Record a hard failure (first one wins). Returns r. */
int cfg_fail(struct cfg *c, int r);
/* JSON.stringify-like text of @v for "(got: ...)", capped; valid until 4 more calls. */
const char *cfg_got(struct cfg *c, const struct jv *v);
/* A key as it appears in a message: raw when printable and short, else JSON-quoted/capped. */
const char *cfg_key(struct cfg *c, const char *key);

/* Join "<base>.<key>" into @buf (CFG_PATH_MAX); returns @buf. */
char *cfg_path(char *buf, const char *base, const char *key);
/* Join "<base>[<i>]" into @buf; returns @buf. */
char *cfg_index(char *buf, const char *base, size_t i);

/*
 * Refuse every key of object @o not in the NULL-terminated @known list:
 * "b4box.json <path>.<key> is not <what> (known: a, b, c)." Returns true when all are known.
 */
bool cfg_known_keys(struct cfg *c,
                    const struct jv *o,
                    const char *path,
                    const char *what,
                    const char *const *known);

/*
 * Typed getters. Each refuses with a message naming @path and returns false when @v is of
 * the wrong type or out of bounds; on success the value is stored in *ret.
 */
/* "b4box.json <path> must be an integer from <min> to <max> (got: <v>)." */
bool cfg_uint_range(struct cfg *c,
                    const struct jv *v,
                    const char *path,
                    uint64_t min,
                    uint64_t max,
                    uint64_t *ret);
/* "b4box.json <path> must be a positive integer (got: <v>)." (max bounds it quietly) */
bool cfg_positive_int(
        struct cfg *c, const struct jv *v, const char *path, uint64_t max, uint64_t *ret);
/* "b4box.json <path> must be a positive number (got: <v>)." */
bool cfg_positive_number(struct cfg *c, const struct jv *v, const char *path, double *ret);
/* "b4box.json <path> must be true or false (got: <v>)." */
bool cfg_bool(struct cfg *c, const struct jv *v, const char *path, bool *ret);
/*
 * "b4box.json <path> must be a non-empty string (got: <v>)." Refuses NUL bytes and more than
 * @max bytes too. *ret is a new copy (set to NULL first).
 */
bool cfg_string(struct cfg *c, const struct jv *v, const char *path, size_t max, char **ret);
/* Copy @s; relative paths are joined to the base dir. NULL on OOM (c->r set). */
char *cfg_abs_path(struct cfg *c, const char *s);

/* Portable path of reference §7.1 (relative, 1-1024 chars of [A-Za-z0-9._ /-], ...). */
bool cfg_is_portable_path(const char *s, size_t len);

/* Block parsers. */
void config_parse_server(struct cfg *c, const struct jv *v, struct b4_server_config *s);
void config_parse_sandbox(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s);
void config_parse_provider(struct cfg *c, const struct jv *v, struct b4_provider_config *p);
void config_parse_network(struct cfg *c, const struct jv *v, struct b4_policy *p);
void config_parse_env(struct cfg *c,
                      const struct jv *v,
                      const char *path,
                      struct b4_env_var **ret,
                      size_t *ret_n);
/* A network allowlist or denylist at @path (at most 256 entries), replacing *@ret. */
void config_parse_net_list(struct cfg *c,
                           const struct jv *v,
                           const char *path,
                           bool allowlist,
                           struct b4_net_entry **ret,
                           size_t *ret_n);
void config_parse_resources(struct cfg *c, const struct jv *v, struct b4_policy *p);
void config_parse_security(struct cfg *c, const struct jv *v, struct b4_security *s);
void config_parse_workspace(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s);
void config_parse_thread(struct cfg *c, const struct jv *v, struct b4_sandbox_config *s);
/* "<path>.command": a non-empty argv of at most CFG_MAX_ARGV strings; a relative argv[0]
 * with a '/' is made absolute against the config's folder. *@ret is a new strv. */
void config_parse_argv(struct cfg *c, const struct jv *v, const char *path, char ***ret);
void config_parse_resolver(struct cfg *c,
                           const struct jv *v,
                           const char *path,
                           struct b4_resolver *r);
void config_parse_workspace_def(struct cfg *c,
                                const struct jv *v,
                                const char *path,
                                struct b4_workspace_def *d);
void config_parse_thread_sandbox(struct cfg *c,
                                 const struct jv *v,
                                 const char *path,
                                 struct b4_thread_sandbox *t);
/* Refuse declarative thread targets whose network does not narrow the app's policy. */
void config_check_thread_network(struct cfg *c, const struct b4_sandbox_config *s);
void config_parse_permissions(struct cfg *c, const struct jv *v, struct b4_permissions_config *p);
/* A thread's allow or deny map (§2.4): any tool names, sorted. */
void config_parse_tool_map(struct cfg *c,
                           const struct jv *v,
                           const char *path,
                           struct b4_tool_patterns **ret,
                           size_t *ret_n);
/* One tool's pattern array (§2.4 limits). Returns the strv (NULL when refused or empty). */
char **config_parse_patterns(struct cfg *c, const struct jv *v, const char *path);
void config_parse_thread_access(struct cfg *c,
                                const struct jv *v,
                                struct b4_thread_access_config *a);

/* Destructors of the embedded parts. */
void config_server_clear(struct b4_server_config *s);
void config_sandbox_clear(struct b4_sandbox_config *s);
void config_resolver_clear(struct b4_resolver *r);
void config_workspace_def_clear(struct b4_workspace_def *d);
void config_thread_targets_clear(struct b4_thread_targets *t);
void config_tool_map_free(struct b4_tool_patterns *m, size_t n);
void config_env_free(struct b4_env_var *env, size_t n);
void config_permissions_clear(struct b4_permissions_config *p);
void config_thread_access_clear(struct b4_thread_access_config *a);

/* Defaults. */
void config_server_init(struct b4_server_config *s);
void config_sandbox_init(struct b4_sandbox_config *s);
/* Fill the default provider (native, scope "b4box"). Return: 0 or -ENOMEM. */
int config_provider_default(struct b4_provider_config *p);
/* Cross-block rules (after every block parsed). */
void config_check_sandbox(struct cfg *c, const struct jv *sandbox, const struct b4_config *cfg);
