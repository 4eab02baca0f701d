/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inspection as JSON (the reference's WorkspaceInspection shape), the answer of
 * POST /threads/{id}/workspace/inspect (and of `b4box read --json`) around it, and the
 * client's strict check of that answer (readThreadWorkspace).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "b4box/inspect.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "inspect-internal.h"
#include "json/json.h"

int inspect_quote(const char *s, char **ret)
{
        return jv_quote(s, ret);
}

static bool ignored(const char *path, char *const *ignore)
{
        for (char *const *p = ignore; p && *p; p++)
                if (strncmp(path, *p, strlen(*p)) == 0)
                        return true;
        return false;
}

/* "key": "text", ... for the entries of a map, ignored paths left out. */
static int append_map(struct strbuf *sb,
                      const char *name,
                      bool files,
                      const struct b4_inspection *insp,
                      char *const *ignore)
{
        size_t n = files ? insp->n_files : insp->n_links;
        bool first = true;
        int r = strbuf_addf(sb, "\"%s\":{", name);

        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *key = files ? insp->files[i].path : insp->links[i].name;
                if (files && ignored(key, ignore))
                        continue;
                r = first ? 0 : strbuf_addc(sb, ',');
                first = false;
                if (r >= 0)
                        r = jv_append_string(sb, key, strlen(key));
                if (r >= 0)
                        r = strbuf_addc(sb, ':');
                if (r >= 0)
                        r = files ? jv_append_string(sb, insp->files[i].text, insp->files[i].len)
                                  : jv_append_string(sb, insp->links[i].target,
                                                     strlen(insp->links[i].target));
        }
        return r < 0 ? r : strbuf_addc(sb, '}');
}

/* ,"skipped":[{"path","reason"}...] (skip mode only), ignored paths left out. */
static int append_skipped(struct strbuf *sb, const struct b4_inspection *insp, char *const *ignore)
{
        bool first = true;
        int r;

        if (!insp->lists_skipped)
                return 0;
        r = strbuf_adds(sb, ",\"skipped\":[");
        for (size_t i = 0; r >= 0 && i < insp->n_skipped; i++) {
                const struct b4_skipped_entry *k = &insp->skipped[i];
                if (ignored(k->path, ignore))
                        continue;
                r = strbuf_adds(sb, first ? "{\"path\":" : ",{\"path\":");
                first = false;
                if (r >= 0)
                        r = jv_append_string(sb, k->path, strlen(k->path));
                if (r >= 0)
                        r = strbuf_addf(sb, ",\"reason\":\"%s\"}", b4_skip_reason_name(k->reason));
        }
        return r < 0 ? r : strbuf_addc(sb, ']');
}

/* {files, symlinks, [skipped,] totalBytes, entries} appended to @sb. */
static int append_inspection(struct strbuf *sb,
                             const struct b4_inspection *insp,
                             char *const *ignore)
{
        int r = strbuf_addc(sb, '{');

        if (r >= 0)
                r = append_map(sb, "files", true, insp, ignore);
        if (r >= 0)
                r = strbuf_addc(sb, ',');
        if (r >= 0)
                r = append_map(sb, "symlinks", false, insp, ignore);
        if (r >= 0)
                r = append_skipped(sb, insp, ignore);
        if (r >= 0)
                r = strbuf_addf(sb, ",\"totalBytes\":%llu,\"entries\":%llu}",
                                (unsigned long long)insp->total_bytes,
                                (unsigned long long)insp->entries);
        return r;
}

/*
 * Written straight into a buffer, not through a jansson tree: an answer holds up to 64 MiB
 * of file text, and escaping it in one pass is several times faster (bench/http.sh).
 */
int b4_inspection_to_json(const struct b4_inspection *insp, char *const *ignore, char **ret)
{
        struct strbuf sb;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = append_inspection(&sb, insp, ignore);
        if (r < 0) {
                strbuf_release(&sb);
                return r;
        }
        return strbuf_detach(&sb, ret, NULL);
}

void b4_workspace_read_clear(struct b4_workspace_read *rd)
{
        b4_inspection_clear(&rd->inspection);
        free(rd->source_digest);
        free(rd->intent_digest);
        *rd = (struct b4_workspace_read){ 0 };
}

/* ,"key":"value" (or null). */
static int append_member(struct strbuf *sb, const char *key, const char *value)
{
        int r = strbuf_addf(sb, ",\"%s\":", key);

        if (r >= 0)
                r = value ? jv_append_string(sb, value, strlen(value)) : strbuf_adds(sb, "null");
        return r;
}

int b4_inspect_response_format(const char *thread_id,
                               const char *root,
                               const struct b4_workspace_read *rd,
                               char *const *ignore,
                               char **ret,
                               size_t *ret_len)
{
        struct strbuf sb;
        int r;

        strbuf_init(&sb, B4_INSPECT_RESPONSE_MAX_BYTES);
        r = strbuf_adds(&sb, "{\"threadId\":");
        if (r >= 0)
                r = jv_append_string(&sb, thread_id, strlen(thread_id));
        if (r >= 0)
                r = append_member(&sb, "sourceDigest", rd->source_digest);
        if (r >= 0)
                r = append_member(&sb, "intentDigest", rd->intent_digest);
        if (r >= 0 && root)
                r = append_member(&sb, "root", root);
        if (r >= 0)
                r = strbuf_adds(&sb, ",\"inspection\":");
        if (r >= 0)
                r = append_inspection(&sb, &rd->inspection, ignore);
        if (r >= 0)
                r = strbuf_addc(&sb, '}');
        if (r >= 0)
                r = strbuf_detach(&sb, ret, ret_len);
        strbuf_release(&sb);
        return r;
}

void b4_inspect_response_clear(struct b4_inspect_response *r)
{
        free(r->thread_id);
        free(r->source_digest);
        free(r->intent_digest);
        free(r->root);
        free(r->inspection_json);
        strv_free(r->paths);
        strv_free(r->skipped_paths);
        strv_free(r->skipped_reasons);
        *r = (struct b4_inspect_response){ 0 };
}

static bool only_keys(const struct jv *o, const char *const *known, const char *const *required)
{
        for (void *it = jv_object_iter(o); it; it = jv_object_next(o, it)) {
                bool ok = false;
                for (const char *const *k = known; *k && !ok; k++)
                        ok = strcmp(*k, jv_iter_key(it)) == 0;
                if (!ok)
                        return false;
        }
        for (const char *const *k = required; *k; k++)
                if (!jv_object_get(o, *k))
                        return false;
        return true;
}

/* A string the C copy holds whole (no NUL inside). */
static bool is_text(const struct jv *v)
{
        return jv_is_string(v) && strlen(jv_string(v)) == jv_string_length(v);
}

static bool is_digest(const struct jv *v)
{
        const char *s = jv_string(v);

        if (jv_is_null(v))
                return true;
        if (!is_text(v) || jv_string_length(v) != 64)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

static bool count_ok(const struct jv *v)
{
        return jv_is_safe_integer(v) && jv_integer(v) >= 0;
}

/* "skipped" (when there): [{path: canonical relative path, reason: a known name}]. */
static bool skipped_ok(const struct jv *v)
{
        static const char *const keys[] = { "path", "reason", NULL };

        if (!v)
                return true;
        if (!jv_is_array(v))
                return false;
        for (size_t i = 0; i < jv_array_size(v); i++) {
                const struct jv *e = jv_array_get(v, i);
                const char *reason = jv_string(jv_object_get(e, "reason"));
                bool known = false;
                if (!jv_is_object(e) || !only_keys(e, keys, keys) || !reason ||
                    !is_text(jv_object_get(e, "path")) ||
                    !b4_inspect_root_is_canonical(jv_string(jv_object_get(e, "path"))))
                        return false;
                for (int k = B4_SKIP_EXECUTABLE; k <= B4_SKIP_OTHER && !known; k++)
                        known = strcmp(reason, b4_skip_reason_name((enum b4_skip_reason)k)) == 0;
                if (!known)
                        return false;
        }
        return true;
}

static bool inspection_ok(const struct jv *in, uint64_t *ret_files)
{
        static const char *const keys[] = { "files",      "symlinks", "skipped",
                                            "totalBytes", "entries",  NULL };
        static const char *const required[] = { "files", "symlinks", "totalBytes", "entries",
                                                NULL };
        const struct jv *files = jv_object_get(in, "files");
        const struct jv *links = jv_object_get(in, "symlinks");

        if (!jv_is_object(in) || !only_keys(in, keys, required) ||
            !skipped_ok(jv_object_get(in, "skipped")) || !jv_is_object(files) ||
            !jv_is_object(links) || !count_ok(jv_object_get(in, "totalBytes")) ||
            !count_ok(jv_object_get(in, "entries")))
                return false;
        for (void *it = jv_object_iter(files); it; it = jv_object_next(files, it))
                if (!b4_inspect_root_is_canonical(jv_iter_key(it)) ||
                    !jv_is_string(jv_iter_value(it)))
                        return false;
        for (void *it = jv_object_iter(links); it; it = jv_object_next(links, it)) {
                const char *k = jv_iter_key(it);
                if (!inspect_leaf_is_valid(k, strlen(k)) || !jv_is_string(jv_iter_value(it)) ||
                    jv_string_length(jv_iter_value(it)) == 0)
                        return false;
        }
        *ret_files = jv_object_size(files);
        return true;
}

static int dup_opt(const struct jv *v, char **ret)
{
        if (!jv_is_string(v))
                return 0;
        *ret = b4_strdup(jv_string(v));
        return *ret ? 0 : -ENOMEM;
}

static int shape(const struct jv *o, struct b4_inspect_response *res)
{
        static const char *const keys[] = { "threadId",   "sourceDigest", "intentDigest",
                                            "inspection", "root",         NULL };
        static const char *const required[] = { "threadId", "sourceDigest", "intentDigest",
                                                "inspection", NULL };
        const struct jv *insp = jv_object_get(o, "inspection");
        const struct jv *root = jv_object_get(o, "root");
        int r;

        if (!jv_is_object(o) || !only_keys(o, keys, required) ||
            !is_text(jv_object_get(o, "threadId")) ||
            !is_digest(jv_object_get(o, "sourceDigest")) ||
            !is_digest(jv_object_get(o, "intentDigest")) ||
            (root && (!is_text(root) || !b4_inspect_root_is_canonical(jv_string(root)))) ||
            !inspection_ok(insp, &res->n_files))
                return -EBADMSG;
        res->total_bytes = (uint64_t)jv_integer(jv_object_get(insp, "totalBytes"));
        res->entries = (uint64_t)jv_integer(jv_object_get(insp, "entries"));
        r = dup_opt(jv_object_get(o, "threadId"), &res->thread_id);
        if (r >= 0)
                r = dup_opt(jv_object_get(o, "sourceDigest"), &res->source_digest);
        if (r >= 0)
                r = dup_opt(jv_object_get(o, "intentDigest"), &res->intent_digest);
        if (r >= 0)
                r = dup_opt(root, &res->root);
        if (r >= 0)
                r = jv_dump(insp, 0, &res->inspection_json);
        const struct jv *files = jv_object_get(insp, "files");
        for (void *it = jv_object_iter(files); r >= 0 && it; it = jv_object_next(files, it))
                r = strv_extend(&res->paths, jv_iter_key(it));
        const struct jv *skipped = jv_object_get(insp, "skipped");
        for (size_t i = 0; r >= 0 && i < jv_array_size(skipped); i++) {
                const struct jv *e = jv_array_get(skipped, i);
                r = strv_extend(&res->skipped_paths, jv_string(jv_object_get(e, "path")));
                if (r >= 0)
                        r = strv_extend(&res->skipped_reasons,
                                        jv_string(jv_object_get(e, "reason")));
        }
        return r;
}

int b4_inspect_response_parse(const char *text,
                              size_t len,
                              const char *expect_thread,
                              const char *expect_source,
                              struct b4_inspect_response *ret,
                              struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *o = NULL;
        struct b4_inspect_response res = { 0 };
        int r;

        if (len > B4_INSPECT_RESPONSE_MAX_BYTES)
                return b4_error_set(err, -EFBIG, "response_too_large: the answer exceeds %u bytes",
                                    B4_INSPECT_RESPONSE_MAX_BYTES);
        r = jv_parse(text, len, &o, NULL);
        if (r >= 0)
                r = shape(o, &res);
        if (r < 0) {
                b4_inspect_response_clear(&res);
                return r == -ENOMEM ? b4_error_set(err, r, "out of memory")
                                    : b4_error_set(err, -EBADMSG,
                                                   "malformed_response: the server's answer is "
                                                   "not a workspace inspection");
        }
        if (expect_thread && strcmp(res.thread_id, expect_thread) != 0)
                r = b4_error_set(err, -ESRCH,
                                 "thread_mismatch: asked about thread \"%s\", the answer is "
                                 "about \"%s\"",
                                 expect_thread, res.thread_id);
        else if (expect_source &&
                 (!res.source_digest || strcmp(res.source_digest, expect_source) != 0))
                r = b4_error_set(err, -EXDEV,
                                 "source_mismatch: expected source %s, the thread's is %s",
                                 expect_source, res.source_digest ? res.source_digest : "none");
        if (r < 0) {
                b4_inspect_response_clear(&res);
                return r;
        }
        *ret = res;
        return 0;
}

int b4_inspect_error_parse(const char *text, size_t len, char **ret_code, char **ret_message)
{
        cleanup_(jv_unrefp) struct jv *o = NULL;
        const struct jv *e, *code;

        if (jv_parse(text, len, &o, NULL) < 0)
                return -EBADMSG;
        e = jv_object_get(o, "error");
        code = jv_object_get(jv_object_get(e, "details"), "code");
        if (!jv_is_string(jv_object_get(e, "message")))
                return -EBADMSG;
        *ret_code = b4_strdup(jv_is_string(code) ? jv_string(code) : "");
        *ret_message = b4_strdup(jv_string(jv_object_get(e, "message")));
        if (!*ret_code || !*ret_message) {
                free(*ret_code);
                free(*ret_message);
                return -ENOMEM;
        }
        return 0;
}
