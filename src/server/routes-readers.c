/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workspace readers over HTTP (docs/http-api.md, "Readers"): POST /threads/{id}/readers opens
 * one (b4_runtime_open_reader(): no run slot, no compute), POST .../readers/{rid}/fs/{op}
 * reads through it with exactly the fs routes' bodies and answers (fs_route_read(),
 * routes-fs.c), DELETE .../readers/{rid} closes it. Behind the inspection's operation and
 * switch (thread.workspace, sandbox.workspaceRead: route_inspect_admit()).
 *
 * The table: at most READERS_PER_THREAD per thread and READERS_MAX per server; ids are 128
 * random bits in hex; a reader is found only through the thread it was opened on and by the
 * principal that opened it (else 404); each call renews its idle expiry. Expired readers are
 * closed by a sweeper thread within READERS_SWEEP_MS (and never found after their expiry), a
 * thread's by its deletion (readers_drop_thread()), the rest at server stop. An entry is
 * reference-counted: the table holds one, each call one, so a close during a read unlists it at
 * once (later calls: 404) and the reader is closed and freed when the read in flight ends, never
 * under it.
 */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "b4box/runtime.h"

#include "base/alloc.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "server-internal.h"

#define READERS_PER_THREAD 8
#define READERS_MAX        256
#define READER_ID_BYTES    16 /* 128 bits */
#define READER_IDLE_MS     60000u
#define READER_IDLE_MIN_MS 1000u
#define READER_IDLE_MAX_MS 600000u
#define READERS_SWEEP_MS   1000u

struct reader_entry {
        char id[READER_ID_BYTES * 2 + 1];
        char *thread_id; /* the thread it was opened through */
        char *owner;     /* the opening principal's name; NULL without policies */
        struct b4_reader *rd;
        uint64_t idle_ms;
        uint64_t expires_ms; /* now_msec() time */
        unsigned refs;       /* the table's (while listed) + each call's */
};

struct readers {
        pthread_mutex_t lock;
        pthread_cond_t wake; /* the sweeper's: stop */
        bool stop;
        bool sweeping; /* the sweeper thread runs */
        pthread_t sweeper;
        struct reader_entry *v[READERS_MAX];
        size_t n;
};

static void entry_free(struct reader_entry *e)
{
        b4_reader_free(e->rd);
        free(e->thread_id);
        free(e->owner);
        free(e);
}

static void entry_unref(struct readers *rs, struct reader_entry *e)
{
        bool last;

        if (!e)
                return;
        (void)pthread_mutex_lock(&rs->lock);
        last = --e->refs == 0;
        (void)pthread_mutex_unlock(&rs->lock);
        if (last)
                entry_free(e); /* closes it: outside the lock, it may take a while */
}

/* Unlist v[i] (lock held); the caller drops the table's reference. */
static struct reader_entry *unlist_locked(struct readers *rs, size_t i)
{
        struct reader_entry *e = rs->v[i];

        rs->v[i] = rs->v[--rs->n];
        rs->v[rs->n] = NULL;
        return e;
}

/* Unlist every entry @match accepts, then drop the table's references. */
static void drop_where(struct readers *rs,
                       bool (*match)(const struct reader_entry *e, const void *arg, uint64_t now),
                       const void *arg)
{
        struct reader_entry *gone[READERS_MAX];
        uint64_t now = now_msec();
        size_t n = 0;

        (void)pthread_mutex_lock(&rs->lock);
        for (size_t i = 0; i < rs->n;)
                if (match(rs->v[i], arg, now))
                        gone[n++] = unlist_locked(rs, i);
                else
                        i++;
        (void)pthread_mutex_unlock(&rs->lock);
        for (size_t i = 0; i < n; i++)
                entry_unref(rs, gone[i]);
}

static bool match_expired(const struct reader_entry *e, const void *arg, uint64_t now)
{
        (void)arg;
        return e->refs == 1 && now >= e->expires_ms; /* idle: no call holds it */
}

static bool match_thread(const struct reader_entry *e, const void *arg, uint64_t now)
{
        const char *id = arg;

        (void)now;
        return strcmp(e->thread_id, id) == 0 || strcmp(e->rd->thread_id, id) == 0;
}

static bool match_any(const struct reader_entry *e, const void *arg, uint64_t now)
{
        (void)e, (void)arg, (void)now;
        return true;
}

/* Close the expired readers every READERS_SWEEP_MS until readers_free(). */
static void *sweeper_main(void *arg)
{
        struct readers *rs = arg;
        bool stop;

        for (;;) {
                (void)pthread_mutex_lock(&rs->lock);
                if (!rs->stop)
                        (void)cond_wait_until_ms(&rs->wake, &rs->lock,
                                                 now_msec() + READERS_SWEEP_MS);
                stop = rs->stop;
                (void)pthread_mutex_unlock(&rs->lock);
                if (stop)
                        return NULL;
                drop_where(rs, match_expired, NULL);
        }
}

int readers_new(struct readers **ret)
{
        struct readers *rs = b4_calloc(1, sizeof(*rs));
        int r;

        if (!rs)
                return -ENOMEM;
        (void)pthread_mutex_init(&rs->lock, NULL);
        (void)pthread_cond_init(&rs->wake, NULL);
        r = pthread_create(&rs->sweeper, NULL, sweeper_main, rs);
        if (r != 0) {
                readers_free(rs);
                return -r;
        }
        rs->sweeping = true;
        *ret = rs;
        return 0;
}

void readers_drop_thread(struct readers *rs, const char *thread_id)
{
        if (rs)
                drop_where(rs, match_thread, thread_id);
}

struct readers *readers_free(struct readers *rs)
{
        if (!rs)
                return NULL;
        if (rs->sweeping) {
                (void)pthread_mutex_lock(&rs->lock);
                rs->stop = true;
                (void)pthread_cond_signal(&rs->wake);
                (void)pthread_mutex_unlock(&rs->lock);
                (void)pthread_join(rs->sweeper, NULL);
        }
        drop_where(rs, match_any, NULL);
        (void)pthread_cond_destroy(&rs->wake);
        (void)pthread_mutex_destroy(&rs->lock);
        free(rs);
        return NULL;
}

/* ---- lookups ---- */

static bool same_owner(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The caller's live reader @rid of this thread, referenced and renewed; NULL = 404 sent. */
static struct reader_entry *find(struct request *rq, const char *rid)
{
        struct readers *rs = rq->srv->readers;
        struct reader_entry *e = NULL;
        uint64_t now = now_msec();

        (void)pthread_mutex_lock(&rs->lock);
        for (size_t i = 0; rid && i < rs->n && !e; i++)
                if (strcmp(rs->v[i]->id, rid) == 0 &&
                    strcmp(rs->v[i]->thread_id, rq->thread.id) == 0 &&
                    same_owner(rs->v[i]->owner, rq->principal_name) && now < rs->v[i]->expires_ms)
                        e = rs->v[i];
        if (e) {
                e->refs++;
                e->expires_ms = now + e->idle_ms;
        }
        (void)pthread_mutex_unlock(&rs->lock);
        if (!e)
                reply_error(rq, 404, "reader_not_found", "no reader '%s' of thread '%s'",
                            rid ? rid : "", rq->thread.id);
        return e;
}

/* Epoch milliseconds @e expires at if left idle, for the answers. */
static int64_t expires_wall_ms(const struct reader_entry *e)
{
        uint64_t now = now_msec();

        return realtime_msec() + (int64_t)(e->expires_ms > now ? e->expires_ms - now : 0);
}

/* ---- POST /threads/{id}/readers ---- */

static bool parse_open(struct request *rq, uint64_t *idle_ms)
{
        static const char *const known[] = { "idleTimeoutMs", NULL };
        cleanup_(jv_unrefp) struct jv *body = NULL;
        const struct jv *v;

        *idle_ms = READER_IDLE_MS;
        if (rq->body.len == 0)
                return true;
        body = request_json_object(rq);
        if (!body || !request_known_keys(rq, body, known))
                return false;
        v = jv_object_get(body, "idleTimeoutMs");
        if (!v)
                return true;
        if (!jv_is_safe_integer(v) || jv_integer(v) < READER_IDLE_MIN_MS ||
            jv_integer(v) > READER_IDLE_MAX_MS) {
                reply_error(rq, 400, "invalid_request",
                            "idleTimeoutMs must be an integer from %u to %u", READER_IDLE_MIN_MS,
                            READER_IDLE_MAX_MS);
                return false;
        }
        *idle_ms = (uint64_t)jv_integer(v);
        return true;
}

/* Whether the bounds leave room for one more reader of @thread_id. Lock held. */
static bool room_locked(const struct readers *rs, const char *thread_id)
{
        size_t mine = 0;

        for (size_t i = 0; i < rs->n; i++)
                mine += strcmp(rs->v[i]->thread_id, thread_id) == 0;
        return rs->n < READERS_MAX && mine < READERS_PER_THREAD;
}

static void refuse_full(struct request *rq)
{
        reply_error(rq, 429, "too_many_readers",
                    "at most %d open readers per thread and %d per server; close one "
                    "(DELETE .../readers/{readerId})",
                    READERS_PER_THREAD, READERS_MAX);
}

/* Room for one more (a first check, before the open); else 429 and false. */
static bool has_room(struct request *rq)
{
        struct readers *rs = rq->srv->readers;
        bool ok;

        (void)pthread_mutex_lock(&rs->lock);
        ok = room_locked(rs, rq->thread.id);
        (void)pthread_mutex_unlock(&rs->lock);
        if (!ok)
                refuse_full(rq);
        return ok;
}

static int entry_new(struct request *rq, uint64_t idle_ms, struct reader_entry **ret)
{
        static const char hex[] = "0123456789abcdef";
        struct reader_entry *e = b4_calloc(1, sizeof(*e));
        unsigned char b[READER_ID_BYTES];

        if (!e)
                return -ENOMEM;
        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
                free(e);
                return -EIO;
        }
        for (size_t i = 0; i < sizeof(b); i++) {
                e->id[2 * i] = hex[b[i] >> 4];
                e->id[2 * i + 1] = hex[b[i] & 15];
        }
        e->thread_id = b4_strdup(rq->thread.id);
        e->owner = rq->principal_name ? b4_strdup(rq->principal_name) : NULL;
        if (!e->thread_id || (rq->principal_name && !e->owner)) {
                entry_free(e);
                return -ENOMEM;
        }
        e->idle_ms = idle_ms;
        e->refs = 1;
        *ret = e;
        return 0;
}

static void refuse_open(struct request *rq, int r, const struct b4_error *err)
{
        if (r == -ENOENT && err->code == B4_CODE_SANDBOX_UNAVAILABLE)
                reply_error(rq, 404, "workspace_not_found", "%s", err->msg);
        else if (r == -EOPNOTSUPP)
                reply_error(rq, 501, "readers_not_supported", "%s", err->msg);
        else if (r == -ENOMEM)
                reply_error(rq, 500, "internal_error", "out of memory");
        else
                reply_b4_error(rq, err);
}

/* List @e, unless the bounds filled up while it opened; then 429 and false. */
static bool list(struct request *rq, struct reader_entry *e)
{
        struct readers *rs = rq->srv->readers;
        bool ok;

        (void)pthread_mutex_lock(&rs->lock);
        ok = room_locked(rs, rq->thread.id);
        if (ok) {
                e->expires_ms = now_msec() + e->idle_ms;
                e->refs++; /* the answer's, dropped below */
                rs->v[rs->n++] = e;
        }
        (void)pthread_mutex_unlock(&rs->lock);
        if (!ok)
                refuse_full(rq);
        return ok;
}

void route_reader_open(struct request *rq)
{
        struct reader_entry *e = NULL;
        struct b4_error err = { 0 };
        uint64_t idle_ms;
        int r;

        drop_where(rq->srv->readers, match_expired, NULL); /* room for this one */
        if (!parse_open(rq, &idle_ms) || !has_room(rq))
                return;
        r = entry_new(rq, idle_ms, &e);
        if (r < 0) {
                reply_error(rq, 500, "internal_error", "cannot make a reader id: %s", strerror(-r));
                return;
        }
        r = b4_runtime_open_reader(rq->srv->opts.runtime, rq->thread.id, NULL, &e->rd, &err);
        if (r < 0) {
                refuse_open(rq, r, &err);
                entry_free(e);
                return;
        }
        if (!list(rq, e)) {
                entry_free(e);
                return;
        }
        reply_json(rq, 201,
                   jv_pack("{s:s, s:I, s:I}", "readerId", e->id, "expiresMs", expires_wall_ms(e),
                           "idleTimeoutMs", (int64_t)e->idle_ms));
        entry_unref(rq->srv->readers, e);
}

/* ---- POST /threads/{id}/readers/{rid}/fs/{op} ---- */

static bool reader_open_tools(struct request *rq, void *ctx, struct b4_tools **ret, void **held)
{
        struct reader_entry *e = ctx;
        struct b4_error err = { 0 };
        int r = b4_runtime_reader_tools(rq->srv->opts.runtime, e->rd, ret, &err);

        *held = NULL;
        if (r < 0)
                reply_b4_error(rq, &err);
        return r >= 0;
}

static void reader_close_tools(void *ctx, void *held)
{
        (void)ctx, (void)held;
}

void route_reader_fs(struct request *rq)
{
        struct reader_entry *e = find(rq, rq->params[1]);
        struct fs_host host = { .open = reader_open_tools,
                                .close = reader_close_tools,
                                .reads_only = true };

        if (!e)
                return;
        host.ctx = e;
        fs_route_read(rq, rq->params[2], &host);
        entry_unref(rq->srv->readers, e);
}

/* ---- DELETE /threads/{id}/readers/{rid} ---- */

void route_reader_close(struct request *rq)
{
        struct readers *rs = rq->srv->readers;
        struct reader_entry *e = find(rq, rq->params[1]);
        struct MHD_Response *resp;
        bool listed = false;

        if (!e)
                return;
        (void)pthread_mutex_lock(&rs->lock);
        for (size_t i = 0; i < rs->n && !listed; i++)
                if (rs->v[i] == e) {
                        (void)unlist_locked(rs, i);
                        listed = true;
                }
        (void)pthread_mutex_unlock(&rs->lock);
        if (listed)
                entry_unref(rs, e); /* the table's */
        entry_unref(rs, e);         /* ours: the last one, or a call's in flight, frees it */
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!resp) {
                reply_error(rq, 500, "internal_error", "out of memory");
                return;
        }
        reply_response(rq, 204, resp);
}
