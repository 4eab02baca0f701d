/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The conformance runner (reference §8 runProviderConformanceCase): a fresh provider per
 * case, thread ids unique to the run, the body, then always the cleanup — drop every handle
 * the body kept and destroy every thread it used — and the reference's combined messages
 * when the body, the cleanup or both failed.
 */

#include "suite.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "b4box/conformance.h"

#include "base/alloc.h"
#include "base/macro.h"

static void vrecord(struct suite_ctx *c,
                    enum b4_conformance_result res,
                    const char *fmt,
                    va_list ap) B4_PRINTF(3, 0);

static void vrecord(struct suite_ctx *c,
                    enum b4_conformance_result res,
                    const char *fmt,
                    va_list ap)
{
        if (c->result != B4_CONFORMANCE_PASS)
                return; /* keep the first */
        c->result = res;
        (void)vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
}

void suite_format(char *buf, size_t size, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

int suite_fail(struct suite_ctx *c, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vrecord(c, B4_CONFORMANCE_FAIL, fmt, ap);
        va_end(ap);
        return -1;
}

int suite_skip(struct suite_ctx *c, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vrecord(c, B4_CONFORMANCE_SKIP, fmt, ap);
        va_end(ap);
        return 1;
}

const char *suite_thread(struct suite_ctx *c, const char *name)
{
        char *id = NULL;

        if (c->n_threads >= SUITE_MAX_THREADS) {
                (void)suite_fail(c, "suite bug: more than %d threads in one case",
                                 SUITE_MAX_THREADS);
                return NULL;
        }
        if (b4_asprintf(&id, "%s-%s", c->prefix, name) < 0) {
                (void)suite_fail(c, "out of memory");
                return NULL;
        }
        c->threads[c->n_threads++] = id;
        return id;
}

int suite_ctx_init(struct suite_ctx *c,
                   const struct b4_conformance_opts *o,
                   struct b4_provider *p,
                   const char *prefix)
{
        *c = (struct suite_ctx){ .o = o, .p = p };
        b4_policy_init(&c->policy);
        c->policy.network = B4_NETWORK_ALLOW;
        if ((size_t)snprintf(c->prefix, sizeof(c->prefix), "%s", prefix) >= sizeof(c->prefix))
                return -EINVAL;
        return 0;
}

void suite_ctx_release(struct suite_ctx *c)
{
        for (size_t i = 0; i < c->n_handles; i++)
                b4_sandbox_unref(c->handles[i]);
        c->n_handles = 0;
        for (size_t i = 0; i < c->n_threads; i++)
                free(c->threads[i]);
        c->n_threads = 0;
        b4_policy_clear(&c->policy);
}

/* Destroy every thread the body used; failures joined into @buf. Return: 0 or -1. */
static int cleanup(struct suite_ctx *c, char *buf, size_t size)
{
        size_t off = 0;
        int r = 0;

        for (size_t i = 0; i < c->n_handles; i++)
                b4_sandbox_unref(c->handles[i]);
        c->n_handles = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < c->n_threads; i++) {
                struct b4_error err = { 0 };

                if (b4_provider_destroy(c->p, c->threads[i], &err) >= 0)
                        continue;
                r = -1;
                if (off < size)
                        off += (size_t)snprintf(buf + off, size - off, "%sdestroy '%s': %s",
                                                off ? "; " : "", c->threads[i], err.msg);
        }
        return r;
}

void suite_run_body(struct suite_ctx *c, suite_case_fn *fn)
{
        char cleanup_msg[512], body_msg[sizeof(c->msg)];
        int body, r;

        body = fn(c);
        if (body < 0 && c->result == B4_CONFORMANCE_PASS)
                (void)suite_fail(c, "failed");
        r = cleanup(c, cleanup_msg, sizeof(cleanup_msg));
        if (r == 0)
                return;
        if (c->result == B4_CONFORMANCE_FAIL) {
                memcpy(body_msg, c->msg, sizeof(body_msg));
                suite_format(c->msg, sizeof(c->msg),
                             "SandboxProvider conformance body and cleanup failed: %s; %s",
                             body_msg, cleanup_msg);
                return;
        }
        c->result = B4_CONFORMANCE_FAIL;
        suite_format(c->msg, sizeof(c->msg), "SandboxProvider conformance cleanup failed: %s",
                     cleanup_msg);
}

/* ---- public entry points ---- */

size_t b4_conformance_n_cases(void)
{
        return suite_n_cases;
}

const char *b4_conformance_case_name(size_t i)
{
        return i < suite_n_cases ? suite_cases[i].name : NULL;
}

static int make_run_id(char *buf, size_t size)
{
        uint32_t rnd = 0;

        if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return -EIO;
        suite_format(buf, size, "b4c-%08x", rnd);
        return 0;
}

static void report(const struct b4_conformance_opts *o,
                   const struct suite_ctx *c,
                   size_t i,
                   struct b4_conformance_report *ret)
{
        ret->index = i;
        ret->name = suite_cases[i].name;
        ret->result = c->result;
        suite_format(ret->message, sizeof(ret->message), "%s",
                     c->result == B4_CONFORMANCE_PASS ? "" : c->msg);
        if (o->report)
                o->report(ret, o->userdata);
}

int b4_conformance_run_case(const struct b4_conformance_opts *o,
                            size_t i,
                            struct b4_conformance_report *ret,
                            struct b4_error *err)
{
        struct b4_provider *p = NULL;
        struct b4_error perr = { 0 };
        struct suite_ctx c;
        char run_id[32], prefix[96];
        int r;

        if (!o || !o->make_provider || !ret || i >= suite_n_cases)
                return b4_error_set(err, -EINVAL,
                                    "conformance needs a provider factory and a case");
        if (!o->run_id && make_run_id(run_id, sizeof(run_id)) < 0)
                return b4_error_set(err, -EIO, "no randomness for the run id");
        suite_format(prefix, sizeof(prefix), "%s-%zu", o->run_id ? o->run_id : run_id, i + 1);
        r = o->make_provider(o->userdata, &p, &perr);
        if (r >= 0 && !p)
                r = -EINVAL;
        if (suite_ctx_init(&c, o, p, prefix) < 0) {
                b4_provider_free(p);
                return b4_error_set(err, -EINVAL, "conformance run id is too long");
        }
        if (r < 0)
                (void)suite_fail(&c, "could not make the provider: %s", perr.msg);
        else
                suite_run_body(&c, suite_cases[i].fn);
        report(o, &c, i, ret);
        suite_ctx_release(&c);
        b4_provider_free(p);
        return 0;
}

int b4_conformance_run(const struct b4_conformance_opts *o,
                       struct b4_conformance_summary *ret,
                       struct b4_error *err)
{
        struct b4_conformance_summary sum = { 0 };
        struct b4_conformance_opts run = { 0 };
        char run_id[32];
        int r;

        if (!o)
                return b4_error_set(err, -EINVAL, "conformance needs options");
        run = *o;
        if (!run.run_id) {
                if (make_run_id(run_id, sizeof(run_id)) < 0)
                        return b4_error_set(err, -EIO, "no randomness for the run id");
                run.run_id = run_id;
        }
        for (size_t i = 0; i < suite_n_cases; i++) {
                struct b4_conformance_report rep = { 0 };

                r = b4_conformance_run_case(&run, i, &rep, err);
                if (r < 0)
                        return r;
                sum.passed += rep.result == B4_CONFORMANCE_PASS;
                sum.failed += rep.result == B4_CONFORMANCE_FAIL;
                sum.skipped += rep.result == B4_CONFORMANCE_SKIP;
        }
        if (ret)
                *ret = sum;
        return sum.failed ? -EPROTO : 0;
}
