/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed workspaces on Kubernetes (docs/kubernetes-provider.md "Managed workspaces"): the
 * record of what the runtime materialised into a thread's PVC is the PVC's own annotation
 * KUBE_ANNOT_WORKSPACE_RECORD, so it goes with the bytes. A PVC deleted behind b4box (the
 * reaper, a person) comes back empty and without a record at the next acquire, and the
 * runtime materialises it again instead of taking an empty workspace as ready; the reaper
 * never deletes a PVC carrying a record.
 *
 *   check    the state's own knowledge first (the record it checked or published; a PVC its
 *            acquire created is empty): no request. Otherwise one GET of the PVC.
 *   publish  one GET of the PVC (another intent's record there is refused, ours is done,
 *            the annotations' total is checked), then one merge PATCH with its
 *            resourceVersion as precondition; a 409 Conflict reads it again and tries again,
 *            KUBE_PUBLISH_TRIES in all.
 *
 * The value is JSON, {"image", "intent", "ready", "sourceDigest"} (sorted keys), read back
 * as untrusted: anything that is not such an object with a string intent is a conflict,
 * never overwritten. Kubernetes bounds all annotations of an object together at 256 KiB
 * (B4_WORKSPACE_RECORD_MAX): a record that would pass it is refused before the PATCH.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "json/json.h"
#include "kube/kube-internal.h"
#include "kube/kube.h"
#include "kube/provider.h"
#include "kube/reap.h"

bool kube_image_pinned(const char *ref)
{
        const char *at = ref ? strrchr(ref, '@') : NULL;
        const char *hex;

        if (!at || at == ref || strncmp(at + 1, "sha256:", 7) != 0)
                return false;
        for (const char *s = ref; s < at; s++)
                if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
                        return false;
        hex = at + 8;
        if (strlen(hex) != 64)
                return false;
        for (const char *s = hex; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

static const struct jv *meta_of(const struct jv *obj)
{
        return jv_object_get(obj, "metadata");
}

static char *pvc_path(struct kube_core *c, const struct kube_state *st)
{
        return kube_path("v1", c->namespace, "persistentvolumeclaims", st->names.pvc, NULL);
}

/* Keep what @pvc (a read or a PATCH's answer) says of its uid and version. */
static void seen_take(struct kube_pvc_seen *s, const struct jv *pvc)
{
        const char *uid = jv_string(jv_object_get(meta_of(pvc), "uid"));
        const char *rv = jv_string(jv_object_get(meta_of(pvc), "resourceVersion"));

        (void)snprintf(s->uid, sizeof(s->uid), "%s", uid ? uid : "");
        (void)snprintf(s->rv, sizeof(s->rv), "%s", rv ? rv : "");
}

static int read_pvc(struct kube_core *c,
                    struct kube_state *st,
                    struct jv **ret,
                    struct b4_error *err)
{
        cleanup_free char *path = pvc_path(c, st);
        int r;

        if (!path)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_get(c->client, path, ret, err);
        if (r >= 0)
                seen_take(&st->pvc, *ret);
        return r;
}

int kube_pvc_learn_uid(struct kube_core *c, struct kube_state *st, struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *pvc = NULL;

        return read_pvc(c, st, &pvc, err);
}

/* "Sandbox unavailable: could not <what> persistentvolumeclaim ...: <the error>." */
static int unavailable(const struct kube_state *st, int r, const char *what, struct b4_error *err)
{
        struct b4_error inner = { 0 };

        if (err)
                inner = *err;
        return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                 "Sandbox unavailable: could not %s persistentvolumeclaim \"%s\": "
                                 "%s. Run `b4box check`.",
                                 what, st->names.pvc, inner.msg);
}

static int set_intent(struct kube_pvc_seen *s, const char *intent)
{
        char *copy = b4_strdup(intent);

        if (!copy)
                return -ENOMEM;
        free(s->intent);
        s->intent = copy;
        return 0;
}

static int conflict(const struct kube_state *st,
                    const char *intent,
                    const char *what,
                    struct b4_error *err)
{
        return b4_error_set_code(
                err, -EEXIST, B4_CODE_SANDBOX_UNAVAILABLE,
                "Workspace conflict: persistentvolumeclaim \"%s\" of thread \"%s\" "
                "holds %s, not the record of this thread's workspace (intent "
                "%.12s...). Destroy the thread's sandbox to start it over.",
                st->names.pvc, st->thread_id, what, intent);
}

/* What @pvc's record says against @intent: 1 ours and ready, 0 none (or ours, not ready),
 * -EEXIST (B4_E2001) another intent's or one that does not parse. */
static int record_of(const struct kube_state *st,
                     const struct jv *pvc,
                     const char *intent,
                     struct b4_error *err)
{
        const char *text = jv_string(jv_object_get(jv_object_get(meta_of(pvc), "annotations"),
                                                   KUBE_ANNOT_WORKSPACE_RECORD));
        cleanup_(jv_unrefp) struct jv *rec = NULL;
        const char *have;
        char what[160];

        if (!text)
                return 0;
        if (jv_parse(text, strlen(text), &rec, NULL) < 0 || !jv_is_object(rec) ||
            !(have = jv_string(jv_object_get(rec, "intent"))))
                return conflict(st, intent, "a workspace record b4box cannot read", err);
        if (strcmp(have, intent) != 0) {
                char shown[13]; /* untrusted: sanitised */

                kube_sanitize(have, strlen(have), shown, sizeof(shown));
                (void)snprintf(what, sizeof(what), "the record of another workspace (intent %s...)",
                               shown);
                return conflict(st, intent, what, err);
        }
        return jv_is_true(jv_object_get(rec, "ready")) ? 1 : 0;
}

static int check(struct kube_core *c,
                 struct kube_state *st,
                 const char *intent,
                 enum b4_storage_state *ret,
                 struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *pvc = NULL;
        int r;

        if (st->pvc.intent && strcmp(st->pvc.intent, intent) == 0) {
                *ret = B4_STORAGE_READY;
                return 0;
        }
        if (st->pvc.made) {
                *ret = B4_STORAGE_EMPTY;
                return 0;
        }
        r = read_pvc(c, st, &pvc, err);
        if (r == -ENOENT || (r >= 0 && jv_object_get(meta_of(pvc), "deletionTimestamp"))) {
                *ret = B4_STORAGE_GONE; /* gone or going: storage to make again */
                return 0;
        }
        if (r < 0)
                return unavailable(st, r, "read", err);
        r = record_of(st, pvc, intent, err);
        if (r < 0)
                return r;
        if (r > 0 && set_intent(&st->pvc, intent) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        *ret = r > 0 ? B4_STORAGE_READY : B4_STORAGE_PENDING;
        return 0;
}

/* The annotation's value: sorted keys, so the same record is the same bytes. */
static int record_text(const struct b4_workspace_record *rec, char **ret)
{
        cleanup_(jv_unrefp) struct jv *v =
                jv_pack("{s:s, s:s*, s:s*, s:b}", "intent", rec->intent, "sourceDigest",
                        rec->source_digest, "image", rec->image, "ready", true);

        return v ? jv_dump(v, JV_SORT_KEYS, ret) : -ENOMEM;
}

/* The bytes the PVC's annotations come to with @value as the record (Kubernetes counts
 * every key and value, ValidateAnnotationsSize). */
static size_t annotations_size(const struct jv *pvc, const char *value)
{
        const struct jv *annot = jv_object_get(meta_of(pvc), "annotations");
        size_t n = strlen(KUBE_ANNOT_WORKSPACE_RECORD) + strlen(value);

        for (void *it = jv_object_iter(annot); it; it = jv_object_next(annot, it)) {
                const char *k = jv_iter_key(it), *v = jv_string(jv_iter_value(it));

                if (strcmp(k, KUBE_ANNOT_WORKSPACE_RECORD) != 0)
                        n += strlen(k) + (v ? strlen(v) : 0);
        }
        return n;
}

static int too_big(const struct kube_state *st, size_t n, struct b4_error *err)
{
        return b4_error_set(
                err, -E2BIG,
                "Workspace record of thread \"%s\" does not fit on persistentvolumeclaim "
                "\"%s\": its annotations would be %zu bytes, and Kubernetes keeps at "
                "most %u bytes (256 KiB) of annotations on an object",
                st->thread_id, st->names.pvc, n, B4_WORKSPACE_RECORD_MAX);
}

/* One PATCH of the record with the known resourceVersion. -EAGAIN: 409, read again. */
static int patch_record(struct kube_core *c,
                        struct kube_state *st,
                        const char *value,
                        struct b4_error *err)
{
        cleanup_free char *path = pvc_path(c, st);
        cleanup_(jv_unrefp) struct jv *patch = NULL, *got = NULL;
        int r;

        patch = jv_pack("{s:{s:s, s:{s:s}}}", "metadata", "resourceVersion", st->pvc.rv,
                        "annotations", KUBE_ANNOT_WORKSPACE_RECORD, value);
        if (!path || !patch)
                return b4_error_set(err, -ENOMEM, "out of memory");
        r = kube_patch(c->client, path, patch, &got, err);
        if (r >= 0)
                seen_take(&st->pvc, got);
        return r;
}

/* Read the PVC before a PATCH: 1 when @intent's record is there already (done), 0 to
 * PATCH with the version read; -EEXIST (another's), -E2BIG (past the total), the client's. */
static int read_for_publish(struct kube_core *c,
                            struct kube_state *st,
                            const char *intent,
                            const char *value,
                            struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *pvc = NULL;
        size_t n;
        int r;

        r = read_pvc(c, st, &pvc, err);
        if (r < 0)
                return unavailable(st, r, "read", err);
        r = record_of(st, pvc, intent, err);
        if (r != 0)
                return r;
        n = annotations_size(pvc, value);
        return n > B4_WORKSPACE_RECORD_MAX ? too_big(st, n, err) : 0;
}

static int publish(struct kube_core *c,
                   struct kube_state *st,
                   const struct b4_workspace_record *rec,
                   struct b4_error *err)
{
        cleanup_free char *value = NULL;
        size_t n;
        int r = -EAGAIN;

        if (st->pvc.intent && strcmp(st->pvc.intent, rec->intent) == 0)
                return 0; /* published or checked through this state: there */
        if (record_text(rec, &value) < 0)
                return b4_error_set(err, -ENOMEM, "out of memory");
        n = strlen(KUBE_ANNOT_WORKSPACE_RECORD) + strlen(value);
        if (n > B4_WORKSPACE_RECORD_MAX) /* whatever else the PVC carries */
                return too_big(st, n, err);
        /* read first, always: the claim's binding changed it since its create (a Pod runs
         * only on a bound claim), so the create's version would only 409 */
        for (unsigned i = 0; i < KUBE_PUBLISH_TRIES && r == -EAGAIN; i++) {
                r = read_for_publish(c, st, rec->intent, value, err);
                if (r < 0)
                        return r;
                if (r == 0)
                        r = patch_record(c, st, value, err);
        }
        if (r == -EAGAIN)
                return b4_error_set_code(err, r, B4_CODE_SANDBOX_UNAVAILABLE,
                                         "Sandbox unavailable: persistentvolumeclaim \"%s\" kept "
                                         "changing while its workspace record was written (%u "
                                         "tries). Run `b4box check`.",
                                         st->names.pvc, KUBE_PUBLISH_TRIES);
        if (r < 0)
                return unavailable(st, r, "record the workspace on", err);
        return set_intent(&st->pvc, rec->intent) < 0 ? b4_error_set(err, -ENOMEM, "out of memory")
                                                     : 0;
}

int kube_workspace_record(struct kube_core *c,
                          struct kube_state *st,
                          enum b4_workspace_verb verb,
                          const struct b4_workspace_record *rec,
                          enum b4_storage_state *ret_state,
                          struct b4_error *err)
{
        if (verb == B4_WORKSPACE_CHECK)
                return check(c, st, rec->intent, ret_state, err);
        return publish(c, st, rec, err);
}
