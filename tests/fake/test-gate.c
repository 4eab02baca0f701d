/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lifecycle gate (reference §3.5) with real threads: shared entries overlap, an
 * exclusive runs alone, a queued exclusive is not starved by later shared entries, FIFO
 * order, per-id state is deleted when idle, and a waiter can be cancelled.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "b4box/cancel.h"

#include "b4-test.h"
#include "core/gate.h"

#define WAIT_MS 5000

static uint64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

        nanosleep(&ts, NULL);
}

/* Wait (bounded) until @id has @n queued entries. */
static bool wait_waiting(struct gate *g, const char *id, size_t n)
{
        uint64_t end = mono_ms() + WAIT_MS;

        while (gate_n_waiting(g, id) != n) {
                if (mono_ms() > end)
                        return false;
                sleep_ms(1);
        }
        return true;
}

/* ---- an event log shared by worker threads ---- */

struct log {
        pthread_mutex_t lock;
        char ev[64][16];
        size_t n;
};

static void log_add(struct log *l, const char *who, const char *what)
{
        pthread_mutex_lock(&l->lock);
        if (l->n < 64)
                snprintf(l->ev[l->n++], sizeof(l->ev[0]), "%s %s", what, who);
        pthread_mutex_unlock(&l->lock);
}

static ssize_t log_find(struct log *l, const char *ev)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->ev[i], ev) == 0)
                        return (ssize_t)i;
        return -1;
}

struct worker {
        struct gate *g;
        const char *id;
        const char *name;
        enum gate_mode mode;
        unsigned hold_ms;
        struct b4_cancel *cancel;
        struct log *log;
        int result;
        atomic_bool started;
        pthread_t t;
};

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct gate_lease *l = NULL;

        w->result = gate_enter(w->g, w->id, w->mode, w->cancel, &l);
        if (w->result < 0)
                return NULL;
        atomic_store(&w->started, true);
        if (w->log)
                log_add(w->log, w->name, "start");
        sleep_ms(w->hold_ms);
        if (w->log)
                log_add(w->log, w->name, "end");
        gate_leave(l);
        return NULL;
}

static void worker_start(struct worker *w)
{
        assert_int_equal(pthread_create(&w->t, NULL, worker_main, w), 0);
}

static void worker_join(struct worker *w)
{
        assert_int_equal(pthread_join(w->t, NULL), 0);
}

/* ---- shared entries overlap ---- */

#define N_SHARED 4

struct overlap {
        struct gate *g;
        atomic_int inside;
        atomic_int saw_all;
};

static void *overlap_main(void *arg)
{
        struct overlap *o = arg;
        struct gate_lease *l = NULL;
        uint64_t end = mono_ms() + WAIT_MS;

        if (gate_enter(o->g, "t", GATE_SHARED, NULL, &l) < 0)
                return NULL;
        atomic_fetch_add(&o->inside, 1);
        while (atomic_load(&o->inside) < N_SHARED && mono_ms() < end)
                sleep_ms(1);
        if (atomic_load(&o->inside) == N_SHARED)
                atomic_fetch_add(&o->saw_all, 1);
        sleep_ms(5);
        gate_leave(l);
        return NULL;
}

static void test_gate_shared_overlap(void **state)
{
        struct overlap o = { .g = gate_new() };
        pthread_t t[N_SHARED];

        assert_non_null(o.g);
        for (int i = 0; i < N_SHARED; i++)
                assert_int_equal(pthread_create(&t[i], NULL, overlap_main, &o), 0);
        for (int i = 0; i < N_SHARED; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&o.saw_all), N_SHARED);
        assert_int_equal(gate_n_ids(o.g), 0);
        gate_free(o.g);
}

/* ---- exclusive runs alone (stress) ---- */

struct stress {
        struct gate *g;
        atomic_int shared_in;
        atomic_int excl_in;
        atomic_int violations;
        atomic_int excl_runs;
        unsigned seed;
};

static void stress_once(struct stress *s, enum gate_mode mode)
{
        struct gate_lease *l = NULL;

        if (gate_enter(s->g, "t", mode, NULL, &l) < 0) {
                atomic_fetch_add(&s->violations, 1);
                return;
        }
        if (mode == GATE_EXCLUSIVE) {
                if (atomic_fetch_add(&s->excl_in, 1) != 0 || atomic_load(&s->shared_in) != 0)
                        atomic_fetch_add(&s->violations, 1);
                usleep(50);
                if (atomic_load(&s->shared_in) != 0)
                        atomic_fetch_add(&s->violations, 1);
                atomic_fetch_sub(&s->excl_in, 1);
                atomic_fetch_add(&s->excl_runs, 1);
        } else {
                atomic_fetch_add(&s->shared_in, 1);
                if (atomic_load(&s->excl_in) != 0)
                        atomic_fetch_add(&s->violations, 1);
                usleep(50);
                atomic_fetch_sub(&s->shared_in, 1);
        }
        gate_leave(l);
}

static void *stress_main(void *arg)
{
        struct stress *s = arg;
        unsigned seed = (unsigned)(uintptr_t)pthread_self();

        for (int i = 0; i < 300; i++)
                stress_once(s, rand_r(&seed) % 4 == 0 ? GATE_EXCLUSIVE : GATE_SHARED);
        return NULL;
}

static void test_gate_exclusive_alone(void **state)
{
        struct stress s = { .g = gate_new() };
        pthread_t t[8];

        assert_non_null(s.g);
        for (int i = 0; i < 8; i++)
                assert_int_equal(pthread_create(&t[i], NULL, stress_main, &s), 0);
        for (int i = 0; i < 8; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(atomic_load(&s.violations), 0);
        assert_true(atomic_load(&s.excl_runs) > 0);
        assert_int_equal(gate_n_ids(s.g), 0);
        gate_free(s.g);
}

/* ---- a queued exclusive goes before later shared entries ---- */

static void test_gate_no_starvation(void **state)
{
        struct gate *g = gate_new();
        struct log log = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct gate_lease *running = NULL;
        struct worker x = { .g = g, .id = "t", .name = "X", .mode = GATE_EXCLUSIVE, .log = &log };
        struct worker s = { .g = g, .id = "t", .name = "S", .mode = GATE_SHARED, .log = &log };

        assert_int_equal(gate_enter(g, "t", GATE_SHARED, NULL, &running), 0);
        worker_start(&x);
        assert_true(wait_waiting(g, "t", 1));
        worker_start(&s);
        assert_true(wait_waiting(g, "t", 2));
        /* S would be compatible with the running shared entry, yet it must wait behind X. */
        sleep_ms(30);
        assert_false(atomic_load(&s.started));
        assert_false(atomic_load(&x.started));
        gate_leave(running);
        worker_join(&x);
        worker_join(&s);
        assert_int_equal(x.result, 0);
        assert_int_equal(s.result, 0);
        assert_true(log_find(&log, "end X") >= 0);
        assert_true(log_find(&log, "end X") < log_find(&log, "start S"));
        assert_int_equal(gate_n_ids(g), 0);
        gate_free(g);
}

/* ---- FIFO: E1 S1 S2 E2 S3 start as E1, {S1 S2} together, E2, S3 ---- */

static void test_gate_fifo(void **state)
{
        struct gate *g = gate_new();
        struct log log = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct gate_lease *running = NULL;
        static const char *names[] = { "E1", "S1", "S2", "E2", "S3" };
        struct worker w[5];

        assert_int_equal(gate_enter(g, "t", GATE_EXCLUSIVE, NULL, &running), 0);
        for (size_t i = 0; i < 5; i++) {
                w[i] = (struct worker){ .g = g,
                                        .id = "t",
                                        .name = names[i],
                                        .hold_ms = 40,
                                        .mode = names[i][0] == 'E' ? GATE_EXCLUSIVE : GATE_SHARED,
                                        .log = &log };
                worker_start(&w[i]);
                assert_true(wait_waiting(g, "t", i + 1));
        }
        gate_leave(running);
        for (size_t i = 0; i < 5; i++) {
                worker_join(&w[i]);
                assert_int_equal(w[i].result, 0);
        }
        assert_int_equal(log.n, 10);
        assert_string_equal(log.ev[0], "start E1");
        assert_string_equal(log.ev[1], "end E1");
        /* S1 and S2 started together: both before either ended */
        assert_true(log_find(&log, "start S1") < log_find(&log, "end S2"));
        assert_true(log_find(&log, "start S2") < log_find(&log, "end S1"));
        assert_string_equal(log.ev[6], "start E2");
        assert_string_equal(log.ev[7], "end E2");
        assert_string_equal(log.ev[8], "start S3");
        assert_int_equal(gate_n_ids(g), 0);
        gate_free(g);
}

/* ---- ids are independent; idle state is deleted ---- */

static void test_gate_ids_independent(void **state)
{
        struct gate *g = gate_new();
        struct gate_lease *a = NULL, *b = NULL, *b2 = NULL;

        assert_int_equal(gate_n_ids(g), 0);
        assert_int_equal(gate_enter(g, "a", GATE_EXCLUSIVE, NULL, &a), 0);
        assert_int_equal(gate_enter(g, "b", GATE_EXCLUSIVE, NULL, &b), 0);
        assert_int_equal(gate_n_ids(g), 2);
        gate_leave(b);
        assert_int_equal(gate_n_ids(g), 1);
        assert_int_equal(gate_enter(g, "b", GATE_SHARED, NULL, &b), 0);
        assert_int_equal(gate_enter(g, "b", GATE_SHARED, NULL, &b2), 0);
        assert_int_equal(gate_n_ids(g), 2);
        gate_leave(b);
        assert_int_equal(gate_n_ids(g), 2);
        gate_leave(b2);
        gate_leave(a);
        assert_int_equal(gate_n_ids(g), 0);
        assert_int_equal(gate_enter(g, "a", GATE_SHARED, NULL, NULL), -EINVAL);
        gate_free(g);
}

/* ---- cancel ---- */

static void test_gate_cancel_while_waiting(void **state)
{
        struct gate *g = gate_new();
        struct b4_cancel *c = b4_cancel_new();
        struct gate_lease *running = NULL, *l = NULL;
        struct worker w = { .g = g, .id = "t", .name = "W", .mode = GATE_SHARED, .cancel = c };

        assert_int_equal(gate_enter(g, "t", GATE_EXCLUSIVE, NULL, &running), 0);
        worker_start(&w);
        assert_true(wait_waiting(g, "t", 1));
        b4_cancel_fire(c);
        worker_join(&w);
        assert_int_equal(w.result, -ECANCELED);
        assert_false(atomic_load(&w.started));
        assert_int_equal(gate_n_waiting(g, "t"), 0);
        gate_leave(running);
        assert_int_equal(gate_n_ids(g), 0);
        /* an already fired token never enters, even when the id is idle */
        assert_int_equal(gate_enter(g, "t", GATE_SHARED, c, &l), -ECANCELED);
        assert_null(l);
        assert_int_equal(gate_n_ids(g), 0);
        b4_cancel_free(c);
        gate_free(g);
}

/* A cancelled exclusive at the head lets the shared entries queued behind it start. */
static void test_gate_cancel_head_exclusive(void **state)
{
        struct gate *g = gate_new();
        struct b4_cancel *c = b4_cancel_new();
        struct gate_lease *running = NULL;
        struct worker x = { .g = g, .id = "t", .name = "X", .mode = GATE_EXCLUSIVE, .cancel = c };
        struct worker s = { .g = g, .id = "t", .name = "S", .mode = GATE_SHARED };

        assert_int_equal(gate_enter(g, "t", GATE_SHARED, NULL, &running), 0);
        worker_start(&x);
        assert_true(wait_waiting(g, "t", 1));
        worker_start(&s);
        assert_true(wait_waiting(g, "t", 2));
        b4_cancel_fire(c);
        worker_join(&x);
        assert_int_equal(x.result, -ECANCELED);
        worker_join(&s); /* finishes while `running` is still held */
        assert_int_equal(s.result, 0);
        assert_true(atomic_load(&s.started));
        gate_leave(running);
        assert_int_equal(gate_n_ids(g), 0);
        b4_cancel_free(c);
        gate_free(g);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_gate_shared_overlap),
                cmocka_unit_test(test_gate_exclusive_alone),
                cmocka_unit_test(test_gate_no_starvation),
                cmocka_unit_test(test_gate_fifo),
                cmocka_unit_test(test_gate_ids_independent),
                cmocka_unit_test(test_gate_cancel_while_waiting),
                cmocka_unit_test(test_gate_cancel_head_exclusive),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
