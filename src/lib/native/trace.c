/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The acquire trace (B4BOX_TRACE_ACQUIRE=1, docs/native.md "What a cold acquire costs"): the
 * monotonic time of each phase of one acquire, printed as one line on stderr when it ends:
 *   b4box trace acquire <thread> <result> total=<us> <phase>=<us> ...
 * Phases are marked where they end (trace_mark()), so the provider's own phases add up to
 * the total. The clone child cannot print or allocate: it stamps CLOCK_MONOTONIC into a
 * shared page the parent mapped (trace_child_page()), and the parent adds those as child.*
 * phases: the child's own timeline, which runs alongside the provider's (spawn.wait is the
 * provider waiting for it). Off (the default), every call is one thread-local load.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "native.h"

#define TRACE_MAX_PHASES 48

struct trace_phase {
        const char *name; /* static */
        uint64_t us;
};

struct trace {
        char thread[64];
        uint64_t t0, last; /* ns */
        struct trace_phase phase[TRACE_MAX_PHASES];
        size_t n;
};

static _Thread_local struct trace *current;

static uint64_t mono_ns(void)
{
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool trace_wanted(void)
{
        const char *v = secure_getenv("B4BOX_TRACE_ACQUIRE");

        return v && *v && strcmp(v, "0") != 0;
}

bool trace_on(void)
{
        return current != NULL;
}

void trace_begin(const char *thread_id)
{
        struct trace *t;

        if (current || !trace_wanted() || !(t = b4_calloc(1, sizeof(*t))))
                return;
        (void)snprintf(t->thread, sizeof(t->thread), "%s", thread_id ? thread_id : "");
        t->t0 = t->last = mono_ns();
        current = t;
}

/* Add @us to phase @name (phases that repeat, such as a child op type, accumulate). */
static void add(struct trace *t, const char *name, uint64_t us)
{
        for (size_t i = 0; i < t->n; i++)
                if (t->phase[i].name == name || strcmp(t->phase[i].name, name) == 0) {
                        t->phase[i].us += us;
                        return;
                }
        if (t->n < TRACE_MAX_PHASES)
                t->phase[t->n++] = (struct trace_phase){ .name = name, .us = us };
}

void trace_mark(const char *phase)
{
        struct trace *t = current;
        uint64_t now;

        if (!t)
                return;
        now = mono_ns();
        add(t, phase, (now - t->last) / 1000);
        t->last = now;
}

void trace_end(int r)
{
        struct trace *t = current;
        char line[2048];
        size_t off;

        if (!t)
                return;
        current = NULL;
        off = (size_t)snprintf(line, sizeof(line), "b4box trace acquire %s %s total=%llu",
                               t->thread, r < 0 ? "failed" : "ok",
                               (unsigned long long)((mono_ns() - t->t0) / 1000));
        for (size_t i = 0; i < t->n && off < sizeof(line); i++)
                off += (size_t)snprintf(line + off, sizeof(line) - off, " %s=%llu",
                                        t->phase[i].name, (unsigned long long)t->phase[i].us);
        if (off >= sizeof(line) - 1)
                off = sizeof(line) - 2;
        line[off++] = '\n';
        (void)!write(STDERR_FILENO, line, off);
        free(t);
}

uint64_t *trace_child_page(void)
{
        void *p;

        if (!current)
                return NULL;
        p = mmap(NULL, TRACE_CHILD_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
}

static const char *op_phase(enum child_op_type type)
{
        switch (type) {
        case CHILD_OP_MOUNT:
                return "child.mount";
        case CHILD_OP_PIVOT:
                return "child.pivot";
        case CHILD_OP_LO_UP:
                return "child.lo";
        case CHILD_OP_HOSTNAME:
                return "child.hostname";
        case CHILD_OP_MKDIR:
        case CHILD_OP_SYMLINK:
        case CHILD_OP_MKFILE:
        case CHILD_OP_UNLINK:
                break;
        }
        return "child.files";
}

void trace_child_stamp(uint64_t *page, size_t slot)
{
        if (page && slot < TRACE_CHILD_SLOTS)
                page[slot] = mono_ns();
}

/* Stamp @to - stamp @from as phase @name, when both were reached. */
static void span(struct trace *t, const char *name, uint64_t from, uint64_t to)
{
        if (from && to >= from)
                add(t, name, (to - from) / 1000);
}

/*
 * The child's stamps (child.c, TRACE_CHILD_*) as phases of its own timeline: from the "go"
 * (child.start: its wake-up) through its cgroups, each op (summed per kind), its user
 * namespace, to the exec, which ends now (the parent read EOF).
 */
void trace_child_fold(const uint64_t *page, const struct child_op *ops, size_t n_ops)
{
        struct trace *t = current;
        uint64_t prev;

        if (!t || !page || !page[TRACE_CHILD_GO])
                return;
        span(t, "child.start", page[TRACE_CHILD_SENT], page[TRACE_CHILD_GO]);
        span(t, "child.cgroup", page[TRACE_CHILD_GO], page[TRACE_CHILD_CGROUP]);
        prev = page[TRACE_CHILD_CGROUP];
        for (size_t i = 0; i <= n_ops && i < TRACE_CHILD_OPS_MAX; i++) {
                uint64_t s = page[TRACE_CHILD_OP0 + i];
                if (!s)
                        break;
                span(t, i == 0 ? "child.cgroupns" : op_phase(ops[i - 1].type), prev, s);
                prev = s;
        }
        if (page[TRACE_CHILD_USERNS_ASK]) {
                span(t, "child.userns", prev, page[TRACE_CHILD_USERNS_ASK]);
                span(t, "child.userns_map", page[TRACE_CHILD_USERNS_ASK], page[TRACE_CHILD_USERNS]);
                prev = page[TRACE_CHILD_USERNS];
        }
        span(t, "child.fds", prev, page[TRACE_CHILD_EXEC]);
        span(t, "child.exec", page[TRACE_CHILD_EXEC], mono_ns());
}

void trace_child_page_free(uint64_t *page)
{
        if (page)
                (void)munmap(page, TRACE_CHILD_SLOTS * sizeof(uint64_t));
}
