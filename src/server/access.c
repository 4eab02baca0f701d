/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The thread-access policy (threadAccess). Principals authenticate with a bearer token read
 * from a file or an environment variable at start-up, compared in constant time (both sides
 * hashed, digests compared without early exit). Each principal may perform a set of
 * operations on its own threads or on all. Checked in the headers phase, before any body
 * byte is read. A thread the caller may not see answers exactly as a missing one, on every
 * route (audit L1); a missing operation answers 403 (404 for reads).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "server-internal.h"

struct principal {
        const struct b4_principal *cfg;  /* borrowed from the config */
        char digest[SHA256_HEX_LEN + 1]; /* sha256 of the token */
};

static int load_token(const struct b4_principal *p, char **ret, struct b4_error *err)
{
        char *t = NULL;
        size_t len = 0;
        int r;

        if (p->token_file) {
                r = read_file_at(AT_FDCWD, p->token_file, 4096, &t, &len);
                if (r < 0)
                        return b4_error_set(err, r,
                                            "cannot read the token of principal '%s' from '%s'",
                                            p->name, p->token_file);
        } else {
                const char *v = secure_getenv(p->token_env);
                if (!v)
                        return b4_error_set(
                                err, -ENOENT,
                                "environment variable '%s' (token of principal '%s') is not set",
                                p->token_env, p->name);
                t = b4_strdup(v);
                if (!t)
                        return -ENOMEM;
                len = strlen(t);
        }
        while (len > 0 && (t[len - 1] == '\n' || t[len - 1] == '\r' || t[len - 1] == ' '))
                t[--len] = '\0';
        if (len < 16) {
                free(t);
                return b4_error_set(err, -EINVAL,
                                    "the token of principal '%s' is shorter than 16 characters",
                                    p->name);
        }
        *ret = t;
        return 0;
}

int access_load(struct server *s, struct b4_error *err)
{
        const struct b4_thread_access_config *ta = &s->config->thread_access;

        if (!ta->present)
                return 0;
        s->principals = b4_calloc(ta->n_principals ? ta->n_principals : 1, sizeof(*s->principals));
        if (!s->principals)
                return -ENOMEM;
        for (size_t i = 0; i < ta->n_principals; i++) {
                cleanup_free char *token = NULL;
                int r = load_token(&ta->principals[i], &token, err);
                if (r < 0)
                        return r;
                s->principals[i].cfg = &ta->principals[i];
                sha256_hex(token, strlen(token), s->principals[i].digest);
                explicit_bzero(token, strlen(token));
        }
        s->n_principals = ta->n_principals;
        if (ta->command)
                return access_program_new(ta->command, ta->decision_timeout_ms, &s->program);
        return 0;
}

void access_free(struct server *s)
{
        s->program = access_program_free(s->program);
        if (s->principals)
                explicit_bzero(s->principals, s->n_principals * sizeof(*s->principals));
        free(s->principals);
        s->principals = NULL;
}

static bool digest_equal(const char *a, const char *b)
{
        unsigned char diff = 0;

        for (size_t i = 0; i < SHA256_HEX_LEN; i++)
                diff |= (unsigned char)(a[i] ^ b[i]);
        return diff == 0;
}

static const struct principal *authenticate(const struct request *rq)
{
        const char *h = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Authorization");
        char digest[SHA256_HEX_LEN + 1];
        const struct principal *found = NULL;

        if (!h || strncasecmp(h, "Bearer ", 7) != 0)
                return NULL;
        sha256_hex(h + 7, strlen(h + 7), digest);
        for (size_t i = 0; i < rq->srv->n_principals; i++)
                if (digest_equal(digest, rq->srv->principals[i].digest))
                        found = &rq->srv->principals[i]; /* no early exit */
        return found;
}

bool access_may_see(const struct request *rq, const char *owner)
{
        if (!rq->principal && !rq->srv->program)
                return true;
        if (rq->see_all)
                return true;
        return owner && rq->principal_name && strcmp(owner, rq->principal_name) == 0;
}

/* The one "no such thread" answer: a thread the caller may not see gets exactly this too, so
 * status, code and text cannot tell an existing thread from a missing one (audit L1). */
static bool thread_not_found(struct request *rq)
{
        reply_error(rq, 404, "thread_not_found", "thread '%s' not found", rq->params[0]);
        return false;
}

/* An operation the principal lacks. On a thread-scoped route the answer is the missing
 * thread's when the thread is invisible or absent, so see check_thread(). */
static bool refuse(struct request *rq, bool read_op)
{
        if (read_op)
                return thread_not_found(rq);
        const char *op = b4_access_op_name(rq->route->op);

        reply_error(rq, 403, "forbidden", "this principal may not %s", op ? op : rq->route->name);
        return false;
}

/*
 * Load the route's thread. Without the right to see it, the caller is told it does not
 * exist, whatever the route (a 403 would confirm that it does).
 */
static bool check_thread(struct request *rq, bool policy)
{
        struct b4_error err = { 0 };
        int r = b4_runtime_thread_get(rq->srv->opts.runtime, rq->params[0], &rq->thread, &err);

        if (r == -ENOENT)
                return thread_not_found(rq);
        if (r < 0) {
                reply_b4_error(rq, &err);
                return false;
        }
        if (policy && !access_may_see(rq, rq->thread.owner))
                return thread_not_found(rq);
        return true;
}

/* ---- the policy program ---------------------------------------------------------------- */

/* The reference's actions (§6.1) by operation. */
static const char *action_of(unsigned op)
{
        switch (op) {
        case B4_OP_THREAD_CREATE:
        case B4_OP_SOURCE_PUT:
                return "create";
        case B4_OP_THREAD_READ:
        case B4_OP_THREAD_WORKSPACE:
        case B4_OP_SOURCE_READ:
                return "read";
        case B4_OP_THREAD_DELETE:
        case B4_OP_SOURCE_DELETE:
                return "delete";
        case B4_OP_THREAD_UPDATE:
        case B4_OP_THREAD_RUN:
        case B4_OP_THREAD_APPROVE:
                return "update";
        default:
                return "fallback";
        }
}

static bool header_secret(const char *name)
{
        return strcasecmp(name, "authorization") == 0 || strcasecmp(name, "cookie") == 0 ||
               strcasecmp(name, "proxy-authorization") == 0;
}

/* Lower-cased names, repeats joined ", " (as the reference hands them to its policy). */
static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
        struct jv *h = cls;
        char name[128];
        size_t n = strlen(k);
        const struct jv *old;
        cleanup_free char *joined = NULL;

        (void)kind;
        if (n >= sizeof(name) || header_secret(k))
                return MHD_YES;
        for (size_t i = 0; i <= n; i++)
                name[i] = (char)(k[i] >= 'A' && k[i] <= 'Z' ? k[i] - 'A' + 'a' : k[i]);
        old = jv_object_get(h, name);
        if (old && asprintf(&joined, "%s, %s", jv_string(old), v ? v : "") < 0)
                return MHD_NO;
        (void)jv_object_set_new(h, name, jv_string_new(joined ? joined : v ? v : ""));
        return MHD_YES;
}

static struct jv *token_digest(const struct request *rq)
{
        const char *h = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Authorization");
        char digest[SHA256_HEX_LEN + 1];

        if (!h || strncasecmp(h, "Bearer ", 7) != 0)
                return jv_null_new();
        sha256_hex(h + 7, strlen(h + 7), digest);
        return jv_string_new(digest);
}

/* The ThreadAccessRequest line (docs/configuration.md "The policy program"). */
static struct jv *program_request(struct request *rq, unsigned op, const struct jv *workspace)
{
        const char *opname = b4_access_op_name(op);
        bool thread = rq->route->thread_scoped;
        struct jv *h = jv_object_new();

        if (h)
                (void)MHD_get_connection_values(rq->conn, MHD_HEADER_KIND, add_header, h);
        return jv_pack("{s:i, s:s, s:s, s:o, s:o, s:s, s:s, s:s?, s:o, s:o, s:O?}", "v", 1,
                       "action", action_of(op), "operation", opname ? opname : rq->route->name,
                       "threadId", thread ? jv_string_new(rq->params[0]) : jv_null_new(), "thread",
                       thread ? jv_pack("{s:s?, s:s?}", "owner", rq->thread.owner, "parent",
                                        rq->thread.parent_id)
                              : jv_null_new(),
                       "method", rq->method, "url", rq->url ? rq->url : rq->path, "principal",
                       rq->principal ? rq->principal->cfg->name : NULL, "tokenDigest",
                       token_digest(rq), "headers", h, "requestedWorkspace", workspace);
}

static void log_decision(const struct request *rq,
                         unsigned op,
                         const struct access_decision *d,
                         int r,
                         uint64_t usec)
{
        const char *opname = b4_access_op_name(op);
        char ms[32];

        (void)snprintf(ms, sizeof(ms), "%.2f", (double)usec / 1000.0);
        server_log("info", "access", "decision", r >= 0 && d->allow ? "allow" : "deny", "operation",
                   opname ? opname : rq->route->name, "thread",
                   rq->route->thread_scoped ? rq->params[0] : "-", "identity",
                   d->identity          ? d->identity
                   : rq->principal_name ? rq->principal_name
                                        : "-",
                   "ms", ms, "error", r < 0 ? strerror(-r) : NULL, NULL);
}

/* A denial: the program's status and message, else 404 as a missing thread on a thread's
 * route (a refusal must not tell an existing thread from a missing one), 403 elsewhere. */
static bool program_refuse(struct request *rq, unsigned op, const struct access_decision *d)
{
        const char *opname = b4_access_op_name(op);
        unsigned status = d->status;

        if (!status)
                status = rq->route->thread_scoped || rq->route->read_op ? 404 : 403;
        if (status == 404 && !d->message && rq->route->thread_scoped)
                return thread_not_found(rq);
        if (d->message)
                reply_error(rq, status, status == 404 ? "not_found" : "forbidden", "%s",
                            d->message);
        else if (status == 404)
                reply_error(rq, 404, "not_found", "Not found");
        else
                reply_error(rq, status, "forbidden", "the access policy does not allow %s",
                            opname ? opname : rq->route->name);
        return false;
}

/* Keep what an allowing answer says about the caller. */
static void program_accept(struct request *rq, struct access_decision *d)
{
        if (d->identity) {
                free(rq->identity);
                rq->identity = TAKE_PTR(d->identity);
                rq->principal_name = rq->identity;
        }
        if (d->threads_set)
                rq->see_all = d->see_all;
        if (d->stamp) {
                free(rq->stamp);
                rq->stamp = TAKE_PTR(d->stamp);
        }
}

static bool program_decide(struct request *rq, unsigned op, const struct jv *workspace)
{
        struct access_decision d = { 0 };
        uint64_t start = now_usec();
        struct jv *req = program_request(rq, op, workspace);
        int r = req ? access_program_ask(rq->srv->program, req, &d) : -ENOMEM;
        bool ok;

        jv_unref(req);
        log_decision(rq, op, &d, r, now_usec() - start);
        ok = r >= 0 && d.allow;
        if (ok)
                program_accept(rq, &d);
        else
                (void)program_refuse(rq, op, &d);
        access_decision_clear(&d);
        return ok;
}

bool access_defers(const struct request *rq)
{
        return rq->srv->program && rq->route && rq->route->op;
}

/* The uploaders of @digest as the program sees them: each stamp, or {principal} for an
 * uploader that has no stamp. */
static struct jv *uploaded_by(struct request *rq, const char *digest)
{
        cleanup_strv char **who = NULL, **stamps = NULL;
        struct jv *a = jv_array_new();

        if (!a ||
            b4_runtime_source_uploaders(rq->srv->opts.runtime, digest, &who, &stamps, NULL) < 0)
                return jv_unref(a);
        for (size_t i = 0; who[i]; i++) {
                struct jv *e = NULL;

                if (*stamps[i])
                        (void)jv_parse(stamps[i], strlen(stamps[i]), &e, NULL);
                else
                        e = jv_pack("{s:s}", "principal", who[i]);
                if (!e || jv_array_append_new(a, e) < 0)
                        return jv_unref(a);
        }
        return a;
}

bool access_check_workspace(struct request *rq, const struct jv *requested)
{
        const struct jv *digest = jv_object_get(requested, "sourceDigest");
        cleanup_(jv_unrefp) struct jv *w = NULL;
        struct jv *by;

        if (!rq->srv->program)
                return true;
        w = jv_pack("{}");
        for (void *it = jv_object_iter(requested); w && it; it = jv_object_next(requested, it))
                if (jv_object_set_new(w, jv_iter_key(it), jv_ref(jv_iter_value(it))) < 0)
                        w = jv_unref(w);
        by = w ? uploaded_by(rq, jv_string(digest)) : NULL;
        if (!by || jv_object_set_new(w, "uploadedBy", by) < 0) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return false;
        }
        return program_decide(rq, B4_OP_THREAD_CREATE, w);
}

/* ---- the headers phase ------------------------------------------------------------------ */

static bool check_principal(struct request *rq)
{
        rq->principal = authenticate(rq);
        if (!rq->principal) {
                reply_error(rq, 401, "unauthorized", "a valid bearer token is required");
                return false;
        }
        rq->principal_name = rq->principal->cfg->name;
        rq->see_all = rq->principal->cfg->threads == B4_THREADS_ALL;
        if (!(rq->principal->cfg->operations & rq->route->op))
                return refuse(rq, rq->route->read_op && rq->route->thread_scoped);
        return true;
}

bool access_check(struct request *rq)
{
        bool policy = rq->srv->config->thread_access.present;
        /* tokens are checked unless a policy program decides alone (no principals): an empty
         * principals list without a program admits nobody, as before */
        bool principals = policy && (rq->srv->n_principals > 0 || !rq->srv->program);
        /* a program without principals decides visibility itself */
        bool visibility = principals;

        if (principals && rq->route->op && !check_principal(rq))
                return false;
        if (rq->route->thread_scoped && !check_thread(rq, visibility))
                return false;
        if (access_defers(rq))
                return program_decide(rq, rq->route->op == ROUTE_OP_ANY ? 0 : rq->route->op, NULL);
        return true;
}
