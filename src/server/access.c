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
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/macro.h"
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
        return 0;
}

void access_free(struct server *s)
{
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
        if (!rq->principal)
                return true;
        if (rq->principal->cfg->threads == B4_THREADS_ALL)
                return true;
        return owner && strcmp(owner, rq->principal->cfg->name) == 0;
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

bool access_check(struct request *rq)
{
        bool policy = rq->srv->config->thread_access.present;

        if (policy && rq->route->op) {
                rq->principal = authenticate(rq);
                if (!rq->principal) {
                        reply_error(rq, 401, "unauthorized", "a valid bearer token is required");
                        return false;
                }
                rq->principal_name = rq->principal->cfg->name;
                if (!(rq->principal->cfg->operations & rq->route->op))
                        return refuse(rq, rq->route->read_op && rq->route->thread_scoped);
        }
        if (rq->route->thread_scoped)
                return check_thread(rq, policy);
        return true;
}
