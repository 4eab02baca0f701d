/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed admission (reference §9.3): the first run of a thread with `sandbox.workspace` or
 * `sandbox.thread` resolves its sandbox exactly once — static definition, resolver command
 * or declarative targets — and writes the source, the association and the sandbox record in
 * one transaction before any provider side effect beyond image resolution. Every later
 * acquire (after a release or a restart) uses the stored rows and never resolves again.
 *
 * The caller (run.c's box_get_locked) holds the sandbox key's acquiring flag, which is the
 * per-thread admission critical section: concurrent first runs wait for one resolution.
 *
 * States: no association -> resolve + admit ("creating") -> materialise into an emptied
 * workspace -> "ready" (with the baseline commit). A "creating" row found later (a crash
 * mid-way) is materialised again from the held source, after destroying partial storage.
 *
 * A provider that keeps the record with the storage (b4_provider_keeps_workspace_record():
 * Kubernetes, the PVC's annotation) is told what was materialised before the row turns
 * "ready", and asked at every later acquire whether its storage still holds it: storage
 * made anew (deleted behind b4box) is materialised again from the held source (the row
 * "creating" meanwhile, so an interruption is a crashed attempt like any), storage being
 * deleted is destroyed and made again first; storage with no record, or another
 * workspace's, is refused. Such a provider also pins every managed thread's image, the
 * default one too.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "b4box/bundle.h"
#include "b4box/config.h"

#include "base/alloc.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "core/config-answer.h"
#include "json/json.h"
#include "runtime-internal.h"
#include "workspace/materialize.h"

#define RECORD_MAX_BYTES (256u * 1024u)

/* What one admission decided. */
struct admission {
        struct b4_policy policy;          /* effective policy */
        char *image;                      /* resolved identity, or NULL */
        struct b4_captured_workspace *ws; /* to materialise, or NULL (ready) */
        struct b4_association assoc;
        struct jv *record; /* the parsed sandbox record, or NULL */
};

static void admission_release(struct admission *a)
{
        b4_policy_clear(&a->policy);
        free(a->image);
        b4_captured_workspace_free(a->ws);
        b4_association_clear(&a->assoc);
        jv_unref(a->record);
}

bool runtime_is_managed(const struct b4_runtime *rt)
{
        const struct b4_config *c = rt->opts.config;

        return c && (c->sandbox.workspace_kind != B4_WORKSPACE_NONE ||
                     c->sandbox.thread_kind != B4_THREAD_NONE);
}

static bool thread_mode(const struct b4_runtime *rt)
{
        return rt->opts.config->sandbox.thread_kind != B4_THREAD_NONE;
}

/* ---- the resolver's input and output ------------------------------------------------- */

/* A thread's staged workspace (reference §6.4, §9.3 step 4), checked against the held upload. */
struct staged {
        char *digest;
        struct jv *ref;           /* {sourceDigest, environmentLinks, baseline?} */
        struct b4_bundle *bundle; /* the held upload, verified; taken by a staged result */
};

static void staged_release(struct staged *st)
{
        free(st->digest);
        jv_unref(st->ref);
        b4_bundle_free(st->bundle);
        *st = (struct staged){ 0 };
}

/* Load @id's staged reference and its source, verified byte for byte; none: st->ref NULL. */
static int load_staged(struct b4_runtime *rt,
                       const char *id,
                       struct staged *st,
                       struct b4_error *err)
{
        cleanup_free char *json = NULL, *payload = NULL, *canon = NULL;
        size_t len = 0, clen = 0;
        int r;

        if (!rt->opts.config->sandbox.staged.enabled)
                return 0;
        r = b4_store_thread_staged_get(rt->opts.store, id, &st->digest, &json, err);
        if (r == -ENOENT)
                return 0;
        if (r >= 0)
                r = b4_store_source_get(rt->opts.store, st->digest, &payload, &len, NULL, err);
        if (r >= 0)
                r = b4_bundle_parse(payload, len, &st->bundle, err);
        if (r >= 0)
                r = b4_bundle_format(st->bundle, &canon, &clen, err);
        if (r >= 0 && (clen != len || memcmp(canon, payload, len) != 0 ||
                       strcmp(st->bundle->digest, st->digest) != 0))
                r = b4_error_set(err, -EBADMSG, "does not match its held source");
        if (r >= 0)
                r = jv_parse(json, strlen(json), &st->ref, err);
        if (r < 0)
                return b4_error_wrap(err, r, "staged workspace %s of thread %s",
                                     st->digest ? st->digest : "?", id);
        return 0;
}

static int resolver_input(struct b4_runtime *rt,
                          const char *id,
                          const struct jv *staged,
                          char **ret,
                          struct b4_error *err)
{
        struct b4_thread_row row = { 0 };
        cleanup_(jv_unrefp) struct jv *in = NULL, *meta = NULL;
        int r;

        r = b4_store_thread_get(rt->opts.store, id, &row, err);
        if (r < 0)
                return r;
        r = jv_parse(row.metadata_json, strlen(row.metadata_json), &meta, err);
        b4_thread_row_clear(&row);
        if (r < 0)
                return r;
        in = jv_pack("{s:s, s:O, s:O?}", "threadId", id, "metadata", meta, "staged",
                     (struct jv *)staged);
        return in ? jv_dump(in, 0, ret) : -ENOMEM;
}

/* A resolver that answers the staged form {sourceDigest, environmentLinks?, baseline?}. */
static int staged_result(const struct jv *w,
                         struct staged *st,
                         struct b4_captured_workspace **ret,
                         struct b4_error *err)
{
        const struct jv *links = jv_object_get(w, "environmentLinks");
        const char *digest = jv_string(jv_object_get(w, "sourceDigest"));
        size_t n = jv_array_size(links);
        cleanup_free struct b4_captured_link *l = b4_calloc(n + 1, sizeof(*l));

        if (!l)
                return -ENOMEM;
        if (!st->ref || !digest || strcmp(digest, st->digest) != 0)
                return b4_error_set(err, -EINVAL,
                                    "its workspace names source %s, which is not the thread's "
                                    "staged source",
                                    digest ? digest : "(not a string)");
        size_t keys = 1 + (links ? 1 : 0) + (jv_object_get(w, "baseline") ? 1 : 0);

        if ((links && !jv_is_array(links)) || jv_object_size(w) != keys)
                return b4_error_set(err, -EINVAL,
                                    "a staged workspace is { sourceDigest, "
                                    "environmentLinks?, baseline? }");
        for (size_t i = 0; i < n; i++) {
                const struct jv *e = jv_array_get(links, i);
                l[i].path = (char *)jv_string(jv_object_get(e, "path"));
                l[i].target = (char *)jv_string(jv_object_get(e, "target"));
                if (!l[i].path || !l[i].target || jv_object_size(e) != 2)
                        return b4_error_set(err, -EINVAL,
                                            "environmentLinks[%zu] must be exactly "
                                            "{ path, target } strings",
                                            i);
        }
        return b4_captured_workspace_make(&st->bundle, l, n, jv_object_get(w, "baseline") != NULL,
                                          ret, err);
}

/* Stand-in for the staged form so the config parser checks the rest of a thread sandbox. */
static int swap_staged(struct jv *v, bool thread, struct jv **ret_w)
{
        struct jv *w = thread ? jv_object_get(v, "workspace") : v;

        *ret_w = NULL;
        if (!jv_object_get(w, "sourceDigest"))
                return 0;
        *ret_w = jv_ref(w);
        if (!thread)
                return 0;
        return jv_object_set_new(v, "workspace",
                                 jv_pack("{s:{s:s, s:[]}}", "source", "directory", ".", "include"));
}

static int parse_output(struct b4_runtime *rt,
                        const char *out,
                        size_t len,
                        bool thread,
                        struct staged *st,
                        struct b4_thread_sandbox *t,
                        struct b4_captured_workspace **ret_ws,
                        struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *v = NULL, *w = NULL;
        int r;

        r = jv_parse(out, len, &v, err);
        if (r < 0)
                return b4_error_wrap(err, r, "printed no JSON");
        r = jv_is_object(v) ? swap_staged(v, thread, &w) : 0;
        if (r < 0)
                return r;
        if (w)
                r = staged_result(w, st, ret_ws, err);
        if (r < 0)
                return r;
        if (thread || !w)
                r = config_parse_resolver_answer(v, thread, rt->opts.config->base_dir, t, err);
        return r;
}

static int run_resolver(struct b4_runtime *rt,
                        const char *id,
                        struct b4_cancel *cancel,
                        struct b4_thread_sandbox *t,
                        struct b4_captured_workspace **ret_ws,
                        struct b4_error *err)
{
        const struct b4_sandbox_config *s = &rt->opts.config->sandbox;
        bool thread = s->thread_kind == B4_THREAD_RESOLVER;
        const struct b4_resolver *res = thread ? &s->thread_resolver : &s->workspace_resolver;
        cleanup_free char *input = NULL, *out = NULL;
        struct staged st = { 0 };
        size_t len = 0;
        int r;

        r = load_staged(rt, id, &st, err);
        if (r >= 0)
                r = resolver_input(rt, id, st.ref, &input, err);
        if (r >= 0)
                r = resolver_run(res, id, rt->opts.config->base_dir, input, cancel, &out, &len,
                                 err);
        if (r >= 0)
                r = parse_output(rt, out, len, thread, &st, t, ret_ws, err);
        staged_release(&st);
        if (r < 0 && r != -ECANCELED && !(err && err->code == B4_CODE_THREAD_REFUSED))
                return b4_error_wrap(err, r, "%s for thread %s",
                                     thread ? "Thread sandbox resolver" : "Workspace resolver", id);
        return r;
}

/* Declarative targets: metadata[key] picks a value's sandbox, else the default. */
static int pick_target(struct b4_runtime *rt,
                       const char *id,
                       const struct b4_thread_sandbox **ret,
                       struct b4_error *err)
{
        const struct b4_thread_targets *t = &rt->opts.config->sandbox.thread_targets;
        struct b4_thread_row row = { 0 };
        cleanup_(jv_unrefp) struct jv *meta = NULL;
        const char *v;
        int r;

        r = b4_store_thread_get(rt->opts.store, id, &row, err);
        if (r >= 0)
                r = jv_parse(row.metadata_json, strlen(row.metadata_json), &meta, err);
        b4_thread_row_clear(&row);
        if (r < 0)
                return r;
        v = jv_string(jv_object_get(meta, t->key));
        for (size_t i = 0; v && i < t->n_values; i++)
                if (strcmp(t->values[i].value, v) == 0) {
                        *ret = &t->values[i].sandbox;
                        return 0;
                }
        if (!t->fallback)
                return b4_error_set_code(err, -EINVAL, B4_CODE_NO_TARGET,
                                         "Thread %s: metadata \"%s\" selects no sandbox target and "
                                         "there is no default",
                                         id, t->key);
        *ret = t->fallback;
        return 0;
}

/* ---- the sandbox record ---------------------------------------------------------------- */

static struct jv *tool_map(const struct b4_tool_patterns *m, size_t n)
{
        struct jv *o = jv_object_new();

        for (size_t i = 0; o && i < n; i++)
                if (jv_object_set_new(o, m[i].tool, jv_string_array_new(m[i].patterns)) < 0)
                        o = jv_unref(o);
        return o;
}

static struct jv *env_json(const struct b4_thread_policy *p)
{
        struct jv *env = jv_object_new();

        for (size_t i = 0; env && i < p->n_env; i++)
                if (jv_object_set_new(env, p->env[i].name, jv_string_new(p->env[i].value)) < 0)
                        env = jv_unref(env);
        return env;
}

static struct jv *resources_json(const struct b4_thread_policy *p)
{
        bool lost = false;
        struct jv *res =
                jv_pack("{s:o*, s:o*, s:o*}", "memoryMb",
                        jv_opt(p->memory_mb, jv_integer_new((int64_t)p->memory_mb), &lost), "cpus",
                        jv_opt(p->cpus > 0, jv_real_new(p->cpus), &lost), "timeoutMs",
                        jv_opt(p->timeout_ms, jv_integer_new((int64_t)p->timeout_ms), &lost));

        return lost ? jv_unref(res) : res;
}

static struct jv *policy_json(const struct b4_thread_policy *p)
{
        bool lost = false;
        struct jv *o = jv_pack(
                "{s:o*, s:o*, s:o*}", "network",
                jv_opt(p->has_network, config_thread_network_json(p), &lost), "env",
                jv_opt(p->has_env, env_json(p), &lost), "resources",
                jv_opt(p->memory_mb || p->cpus > 0 || p->timeout_ms, resources_json(p), &lost));

        return lost ? jv_unref(o) : o;
}

/* The record: "permissions" only when a tool is allowed or denied, each map only when it
 * has a tool. */
static int record_json(const struct b4_thread_sandbox *t, struct jv **ret)
{
        bool lost = false;
        struct jv *perm = jv_pack("{s:o*, s:o*}", "allow",
                                  jv_opt(t->n_allow, tool_map(t->allow, t->n_allow), &lost), "deny",
                                  jv_opt(t->n_deny, tool_map(t->deny, t->n_deny), &lost));
        struct jv *rec = jv_pack("{s:i, s:s*, s:o, s:o*}", "version", 1, "image", t->image,
                                 "policy", policy_json(&t->policy), "permissions",
                                 jv_opt(t->n_allow || t->n_deny, perm, &lost));

        if (!rec || lost) {
                jv_unref(rec);
                return -ENOMEM;
        }
        *ret = rec;
        return 0;
}

/* ---- effective policy (§2.4) ------------------------------------------------------------ */

static int merge_env(struct b4_policy *p, const struct jv *env)
{
        for (size_t i = 0; i < p->n_env; i++) {
                free(p->env[i].name);
                free(p->env[i].value);
        }
        p->n_env = 0;
        for (void *it = jv_object_iter(env); it; it = jv_object_next(env, it)) {
                int r = b4_policy_set_env(p, jv_iter_key(it), jv_string(jv_iter_value(it)));

                if (r < 0)
                        return r;
        }
        return 0;
}

static int apply_record_policy(const struct b4_policy *app,
                               const struct jv *pol,
                               struct b4_policy *p,
                               struct b4_error *err)
{
        const struct jv *res = jv_object_get(pol, "resources"), *x;
        int r = b4_policy_copy(p, app);

        if (r < 0)
                return r;
        r = config_thread_network_apply(app, jv_object_get(pol, "network"), p, err);
        if (r < 0)
                return r;
        if ((x = jv_object_get(pol, "env")) && (r = merge_env(p, x)) < 0)
                return r;
        if ((x = jv_object_get(res, "memoryMb")))
                p->resources.memory_mb = (uint64_t)jv_integer(x);
        if ((x = jv_object_get(res, "cpus")))
                p->resources.cpus = jv_number(x);
        if ((x = jv_object_get(res, "timeoutMs")))
                p->resources.timeout_ms = (uint64_t)jv_integer(x);
        return 0;
}

int b4_runtime_thread_policy(struct b4_runtime *rt,
                             const char *id,
                             struct b4_policy *ret,
                             enum b4_policy_source *ret_source,
                             struct b4_error *err)
{
        cleanup_free char *key = NULL, *digest = NULL, *payload = NULL;
        cleanup_(jv_unrefp) struct jv *rec = NULL;
        bool per_thread = rt->opts.config && thread_mode(rt);
        int r;

        r = runtime_sandbox_key(rt, id, &key, err);
        if (r >= 0 && per_thread)
                r = b4_store_record_get(rt->opts.store, key, &digest, &payload, err);
        if (r < 0 && r != -ENOENT)
                return r;
        if (!per_thread || r == -ENOENT) {
                *ret_source = per_thread ? B4_POLICY_PENDING : B4_POLICY_APP;
                return b4_policy_copy(ret, &rt->policy);
        }
        r = jv_parse(payload, strlen(payload), &rec, err);
        if (r >= 0)
                r = apply_record_policy(&rt->policy, jv_object_get(rec, "policy"), ret, err);
        if (r < 0)
                return r;
        *ret_source = B4_POLICY_THREAD;
        return 0;
}

/* ---- first admission ------------------------------------------------------------------- */

static int uuid_v4(char ret[37])
{
        unsigned char b[16];

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                return -EIO;
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        (void)snprintf(ret, 37,
                       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                       b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                       b[13], b[14], b[15]);
        return 0;
}

/* The association payload: what the workspace is made of and where it runs. */
static int association_json(const struct b4_captured_workspace *ws,
                            const char *image,
                            struct jv **ret)
{
        cleanup_(jv_unrefp) struct jv *links = jv_array_new();
        struct jv *o;
        char op[37];
        int r = links ? uuid_v4(op) : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < ws->n_links; i++)
                r = jv_array_append_new(links, jv_pack("{s:s, s:s}", "path", ws->links[i].path,
                                                       "target", ws->links[i].target));
        if (r < 0)
                return r;
        o = jv_pack("{s:i, s:s, s:s, s:o, s:s*, s:s*}", "version", 1, "operationId", op,
                    "sourceDigest", ws->source->digest, "environmentLinks", TAKE_PTR(links),
                    "baseline", ws->baseline_git ? "git" : NULL, "image", image);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

static void digest_of(const char *tag, const char *json, char ret[SHA256_HEX_LEN + 1])
{
        struct sha256_ctx *c = sha256_new();

        if (!c) {
                sha256_hex(json, strlen(json), ret);
                return;
        }
        sha256_update(c, "[\"", 2);
        sha256_update(c, tag, strlen(tag));
        sha256_update(c, "\",", 2);
        sha256_update(c, json, strlen(json));
        sha256_update(c, "]", 1);
        sha256_final_hex(c, ret);
}

/* Whether the provider keeps the workspace record with the storage (see the top). */
static bool record_kept(const struct b4_runtime *rt)
{
        return b4_provider_keeps_workspace_record(rt->opts.provider);
}

/* The image a managed thread runs: its own, or the provider's default. */
static const char *thread_image(const struct b4_runtime *rt, const struct b4_thread_sandbox *t)
{
        return t->image ? t->image : rt->opts.config->sandbox.provider.image;
}

/* Resolve the thread's sandbox: a definition to capture, and (thread mode) its record. */
static int resolve(struct b4_runtime *rt,
                   const char *id,
                   struct b4_cancel *cancel,
                   struct b4_thread_sandbox *owned,
                   const struct b4_thread_sandbox **ret,
                   struct b4_captured_workspace **ret_ws,
                   struct b4_error *err)
{
        const struct b4_sandbox_config *s = &rt->opts.config->sandbox;
        int r;

        if (s->thread_kind == B4_THREAD_TARGETS)
                return pick_target(rt, id, ret, err);
        if (s->workspace_kind == B4_WORKSPACE_STATIC) {
                owned->workspace = s->workspace; /* borrowed: see first_admission */
                *ret = owned;
                return 0;
        }
        r = run_resolver(rt, id, cancel, owned, ret_ws, err);
        if (r < 0)
                return r;
        *ret = owned;
        return 0;
}

static int check_record(struct b4_runtime *rt,
                        const char *id,
                        const struct jv *rec,
                        char **ret_json,
                        struct b4_error *err)
{
        struct b4_policy probe;
        int r;

        r = jv_dump(rec, JV_SORT_KEYS, ret_json);
        if (r < 0)
                return r;
        if (strlen(*ret_json) > RECORD_MAX_BYTES)
                return b4_error_set(err, -E2BIG,
                                    "Thread %s's sandbox record exceeds %u bytes: narrow its "
                                    "env or permissions",
                                    id, RECORD_MAX_BYTES);
        b4_policy_init(&probe);
        r = apply_record_policy(&rt->policy, jv_object_get(rec, "policy"), &probe, err);
        b4_policy_clear(&probe);
        return r;
}

static int admit(struct b4_runtime *rt,
                 const char *id,
                 const struct b4_captured_workspace *ws,
                 const char *image,
                 const char *record,
                 struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *assoc = NULL;
        cleanup_free char *assoc_json = NULL, *source = NULL;
        char intent[SHA256_HEX_LEN + 1], rdigest[SHA256_HEX_LEN + 1];
        size_t len = 0;
        int r;

        r = association_json(ws, image, &assoc);
        if (r >= 0)
                r = jv_dump(assoc, JV_SORT_KEYS, &assoc_json);
        if (r >= 0)
                r = b4_bundle_format(ws->source, &source, &len, err);
        if (r < 0)
                return r;
        digest_of("b4-workspace-intent-v1", assoc_json, intent);
        if (record)
                digest_of("b4-thread-sandbox-v1", record, rdigest);
        struct b4_admission_rows rows = {
                .thread_id = id,
                .source_digest = ws->source->digest,
                .source_payload = source,
                .source_len = len,
                .intent_digest = intent,
                .association_payload = assoc_json,
                .record_digest = record ? rdigest : NULL,
                .record_payload = record,
        };
        return b4_store_admit(rt->opts.store, &rows, err);
}

static int first_admission(struct b4_runtime *rt,
                           const char *id,
                           struct b4_cancel *cancel,
                           struct b4_captured_workspace **ret_ws,
                           struct b4_error *err)
{
        struct b4_thread_sandbox owned = { 0 };
        const struct b4_thread_sandbox *t = NULL;
        struct b4_captured_workspace *ws = NULL;
        cleanup_(jv_unrefp) struct jv *rec = NULL;
        cleanup_free char *record = NULL, *image = NULL;
        bool borrowed = rt->opts.config->sandbox.workspace_kind == B4_WORKSPACE_STATIC;
        int r;

        r = resolve(rt, id, cancel, &owned, &t, &ws, err);
        if (r >= 0 && thread_mode(rt) && (r = record_json(t, &rec)) >= 0)
                r = check_record(rt, id, rec, &record, err);
        if (r >= 0 && (t->image || record_kept(rt))) /* refused before any side effect */
                r = b4_provider_resolve_image(rt->opts.provider, thread_image(rt, t), &image, err);
        if (r >= 0 && !ws) /* a staged result is already a verified bundle */
                r = b4_workspace_capture(rt->opts.config->base_dir, &t->workspace, cancel, &ws,
                                         err);
        if (r >= 0)
                r = admit(rt, id, ws, image, record, err);
        if (!borrowed)
                config_thread_sandbox_clear(&owned);
        if (r >= 0)
                *ret_ws = TAKE_PTR(ws);
        b4_captured_workspace_free(ws);
        if (r < 0 && r != -ENOMEM && r != -ECANCELED && err && err->code == B4_CODE_NONE)
                err->code = B4_CODE_SANDBOX_UNAVAILABLE; /* typed refusals keep their code */
        return r;
}

/* ---- later admissions: the stored rows ------------------------------------------------- */

static int load_record(struct b4_runtime *rt,
                       const char *id,
                       struct admission *a,
                       struct b4_error *err)
{
        cleanup_free char *digest = NULL, *payload = NULL;
        int r;

        if (!thread_mode(rt))
                return b4_policy_copy(&a->policy, &rt->policy);
        r = b4_store_record_get(rt->opts.store, id, &digest, &payload, err);
        if (r == -ENOENT)
                return b4_error_set(err, -ENOTRECOVERABLE,
                                    "Thread %s has no sandbox record: its workspace exists but "
                                    "what its resolver chose is unknown. Delete the thread to "
                                    "resolve its sandbox again.",
                                    id);
        if (r >= 0)
                r = jv_parse(payload, strlen(payload), &a->record, err);
        if (r >= 0)
                r = apply_record_policy(&rt->policy, jv_object_get(a->record, "policy"), &a->policy,
                                        err);
        return r;
}

/* A "creating" association found on a later admission: rebuild its workspace from the rows. */
static int load_workspace(struct b4_runtime *rt,
                          const struct jv *assoc,
                          struct admission *a,
                          struct b4_error *err)
{
        const struct jv *links = jv_object_get(assoc, "environmentLinks");
        size_t n = jv_array_size(links), len = 0;
        cleanup_free struct b4_captured_link *l = b4_calloc(n + 1, sizeof(*l));
        cleanup_free char *payload = NULL;
        struct b4_bundle *b = NULL;
        int r;

        if (!l)
                return -ENOMEM;
        r = b4_store_source_get(rt->opts.store, a->assoc.source_digest, &payload, &len, NULL, err);
        if (r >= 0)
                r = b4_bundle_parse(payload, len, &b, err);
        if (r < 0)
                return b4_error_wrap(err, r, "workspace source of thread %s", a->assoc.thread_id);
        for (size_t i = 0; i < n; i++) {
                const struct jv *e = jv_array_get(links, i);

                l[i] = (struct b4_captured_link){
                        .path = (char *)jv_string(jv_object_get(e, "path")),
                        .target = (char *)jv_string(jv_object_get(e, "target")),
                };
        }
        r = b4_captured_workspace_make(&b, l, n, jv_object_get(assoc, "baseline") != NULL, &a->ws,
                                       err);
        b4_bundle_free(b);
        return r;
}

static int load(struct b4_runtime *rt,
                const char *id,
                struct b4_cancel *cancel,
                struct admission *a,
                struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *assoc = NULL;
        const char *image;
        int r;

        r = b4_store_association_get(rt->opts.store, id, &a->assoc, err);
        if (r == -ENOENT) {
                r = first_admission(rt, id, cancel, &a->ws, err);
                if (r >= 0)
                        r = b4_store_association_get(rt->opts.store, id, &a->assoc, err);
        }
        if (r >= 0)
                r = load_record(rt, id, a, err);
        if (r >= 0)
                r = jv_parse(a->assoc.payload, strlen(a->assoc.payload), &assoc, err);
        if (r < 0)
                return r;
        image = jv_string(jv_object_get(assoc, "image"));
        if (image && !(a->image = b4_strdup(image)))
                return -ENOMEM;
        if (strcmp(a->assoc.state, "creating") == 0 && !a->ws)
                return load_workspace(rt, assoc, a, err);
        return 0;
}

static int mark_ready(struct b4_runtime *rt,
                      struct admission *a,
                      const char *commit,
                      struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *assoc = NULL;
        cleanup_free char *json = NULL;
        int r;

        r = jv_parse(a->assoc.payload, strlen(a->assoc.payload), &assoc, err);
        if (r >= 0 && commit)
                r = jv_object_set_new(assoc, "baselineCommit", jv_string_new(commit));
        if (r >= 0)
                r = jv_dump(assoc, JV_SORT_KEYS, &json);
        if (r >= 0)
                r = b4_store_association_update(rt->opts.store, a->assoc.thread_id,
                                                a->assoc.revision, "ready", json, err);
        return r;
}

/* The provider's acquire, reported as cold or reattach. */
static int acquire_observed(struct b4_runtime *rt,
                            const struct b4_acquire_req *req,
                            struct b4_sandbox **ret,
                            struct b4_error *err)
{
        uint64_t start = now_usec();
        int r = b4_provider_acquire(rt->opts.provider, req, ret, err);

        if (r >= 0)
                runtime_observe(
                        rt, (*ret)->reattached ? B4_EVENT_ACQUIRE_REATTACH : B4_EVENT_ACQUIRE_COLD,
                        start);
        return r;
}

/* Tell a provider that keeps the record what its storage now holds. */
static int publish_record(struct b4_runtime *rt, const struct admission *a, struct b4_error *err)
{
        struct b4_workspace_record rec = { .intent = a->assoc.intent_digest,
                                           .source_digest = a->assoc.source_digest,
                                           .image = a->image };

        if (!record_kept(rt))
                return 0;
        return b4_provider_workspace_publish(rt->opts.provider, a->assoc.thread_id, &rec, err);
}

/* Materialise into emptied storage, publish the record, then mark the association ready. */
static int make_workspace(struct b4_runtime *rt,
                          struct admission *a,
                          struct b4_sandbox *sb,
                          struct b4_cancel *cancel,
                          struct b4_error *err)
{
        cleanup_free char *commit = NULL;
        int r;

        r = b4_workspace_materialize(sb, a->ws, cancel, &commit, err);
        if (r >= 0)
                r = publish_record(rt, a, err);
        if (r >= 0)
                r = mark_ready(rt, a, commit, err);
        return r;
}

/* Storage being deleted, destroyed and made again: it must come back empty. */
static int storage_anew(struct b4_runtime *rt,
                        const struct b4_acquire_req *req,
                        const char *intent,
                        struct b4_sandbox **sb,
                        struct b4_error *err)
{
        enum b4_storage_state st = B4_STORAGE_GONE;
        int r;

        *sb = b4_sandbox_unref(*sb);
        r = b4_provider_destroy(rt->opts.provider, req->thread_id, err);
        if (r >= 0)
                r = acquire_observed(rt, req, sb, err);
        if (r >= 0)
                r = b4_provider_workspace_check(rt->opts.provider, req->thread_id, intent, &st,
                                                err);
        if (r >= 0 && st != B4_STORAGE_EMPTY)
                r = b4_error_set_code(err, -EAGAIN, B4_CODE_SANDBOX_UNAVAILABLE,
                                      "Sandbox unavailable: the workspace storage of thread %s "
                                      "was destroyed and made again, and still is not empty. "
                                      "Retry the run.",
                                      req->thread_id);
        return r;
}

/* The row back to "creating" before materialising a "ready" thread again. */
static int mark_creating(struct b4_runtime *rt, struct admission *a, struct b4_error *err)
{
        int r = b4_store_association_update(rt->opts.store, a->assoc.thread_id, a->assoc.revision,
                                            "creating", a->assoc.payload, err);

        if (r >= 0)
                a->assoc.revision++;
        return r;
}

static int unrecorded(const char *id, struct b4_error *err)
{
        return b4_error_set_code(err, -ENOTRECOVERABLE, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: the workspace storage of thread %s carries "
                                 "no record of its workspace (made before b4box recorded "
                                 "workspaces with their storage, or by hand), so what it holds "
                                 "is unknown. Copy out what you need (a workspace reader), then "
                                 "destroy the thread's sandbox to materialise it afresh.",
                                 id);
}

/* A "ready" association whose provider keeps the record: what does the storage hold? Not
 * the workspace: a->ws is set from the held source, to materialise again. */
static int check_storage(struct b4_runtime *rt,
                         struct admission *a,
                         const struct b4_acquire_req *req,
                         struct b4_sandbox **sb,
                         struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *assoc = NULL;
        const char *intent = a->assoc.intent_digest;
        enum b4_storage_state st;
        int r;

        if (!record_kept(rt))
                return 0;
        r = b4_provider_workspace_check(rt->opts.provider, req->thread_id, intent, &st, err);
        if (r < 0 || st == B4_STORAGE_READY)
                return r;
        if (st == B4_STORAGE_PENDING) /* never materialise over, nor trust, what is there */
                return unrecorded(req->thread_id, err);
        if (st == B4_STORAGE_GONE)
                r = storage_anew(rt, req, intent, sb, err);
        if (r >= 0)
                r = mark_creating(rt, a, err);
        if (r >= 0)
                r = jv_parse(a->assoc.payload, strlen(a->assoc.payload), &assoc, err);
        if (r >= 0)
                r = load_workspace(rt, assoc, a, err);
        return r;
}

int admission_acquire(struct b4_runtime *rt,
                      const char *key,
                      struct b4_cancel *cancel,
                      struct b4_sandbox **ret,
                      struct b4_error *err)
{
        struct b4_acquire_req req = { .thread_id = key, .policy = &rt->policy, .cancel = cancel };
        uint64_t start = now_usec();
        struct admission a = { 0 };
        struct b4_sandbox *sb = NULL;
        int r;

        if (!runtime_is_managed(rt))
                return acquire_observed(rt, &req, ret, err);
        b4_policy_init(&a.policy);
        r = load(rt, key, cancel, &a, err);
        if (r >= 0 && a.ws) /* never materialise over what a crashed attempt left */
                r = b4_provider_destroy(rt->opts.provider, key, err);
        if (r >= 0) {
                req.policy = &a.policy;
                req.image = a.image;
                r = acquire_observed(rt, &req, &sb, err);
        }
        if (r >= 0 && !a.ws)
                r = check_storage(rt, &a, &req, &sb, err);
        if (r >= 0 && a.ws)
                r = make_workspace(rt, &a, sb, cancel, err);
        if (r < 0 && sb) {
                sb = b4_sandbox_unref(sb);
                (void)b4_provider_release(rt->opts.provider, key, NULL);
        }
        admission_release(&a);
        if (r >= 0) {
                *ret = sb;
                runtime_observe(rt, B4_EVENT_ADMISSION, start);
        }
        return r;
}
