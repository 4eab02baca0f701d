/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The provider conformance suite (reference §8, the seeds' runProviderConformance), runnable
 * against any provider: the reference's eight cases (the reader cases 5-8 are skipped when
 * the provider has no reader) and ours on top. Every case gets a fresh provider from the
 * factory, uses thread ids unique to the run, and always destroys every thread it used, even
 * when its body failed. docs/conformance.md lists the cases and what each asserts.
 */

#include <stddef.h>

#include "b4box/error.h"
#include "b4box/provider.h"

enum b4_conformance_result {
        B4_CONFORMANCE_PASS = 0,
        B4_CONFORMANCE_FAIL = 1,
        B4_CONFORMANCE_SKIP = 2,
};

struct b4_conformance_report {
        size_t index;     /* case number, 0-based */
        const char *name; /* static */
        enum b4_conformance_result result;
        char message[1024]; /* why it failed or was skipped; "" on pass */
};

/* Make a fresh provider for one case; the suite frees it with b4_provider_free(). */
typedef int b4_conformance_factory_fn(void *userdata,
                                      struct b4_provider **ret,
                                      struct b4_error *err);
/* Called once per case with its outcome; @rep is borrowed for the call. */
typedef void b4_conformance_report_fn(const struct b4_conformance_report *rep, void *userdata);
/*
 * Optional provider-specific probe: how many live compute instances (keepers, containers,
 * fake instances) @p holds for @thread_id. Return: the count, or -errno.
 */
typedef int b4_conformance_instances_fn(struct b4_provider *p,
                                        const char *thread_id,
                                        void *userdata);

struct b4_conformance_opts {
        b4_conformance_factory_fn *make_provider; /* required */
        b4_conformance_report_fn *report;         /* optional */
        b4_conformance_instances_fn *instances;   /* optional; sharpens the concurrency case */
        void *userdata;                           /* passed to the three callbacks */
        unsigned concurrency;                     /* acquirers in the concurrency case; 0 = 4 */
        const char *run_id; /* thread id prefix; NULL = "b4c-<random>" (unique per run) */
};

struct b4_conformance_summary {
        unsigned passed;
        unsigned failed;
        unsigned skipped;
};

/** b4_conformance_n_cases() - the number of cases. */
B4_PUBLIC size_t b4_conformance_n_cases(void);

/** b4_conformance_case_name() - the name of case @i (static string), or NULL past the end. */
B4_PUBLIC const char *b4_conformance_case_name(size_t i);

/**
 * b4_conformance_run_case() - run case @i once
 * @o:   borrowed for the call
 * @ret: filled with the outcome
 *
 * The report callback, when set, is called too. Return: 0 (whatever the outcome), or
 * -EINVAL (bad @i or options), -ENOMEM.
 */
B4_PUBLIC int b4_conformance_run_case(const struct b4_conformance_opts *o,
                                      size_t i,
                                      struct b4_conformance_report *ret,
                                      struct b4_error *err);

/**
 * b4_conformance_run() - run every case in order, reporting each through o->report
 * @ret: optional; the counts
 * Return: 0 when no case failed, -EPROTO when one did, -EINVAL/-ENOMEM when the suite
 * itself could not run.
 */
B4_PUBLIC int b4_conformance_run(const struct b4_conformance_opts *o,
                                 struct b4_conformance_summary *ret,
                                 struct b4_error *err);
