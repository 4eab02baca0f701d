/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's request parser: one frame in, one validated struct agent_req out. The host is
 * the agent's only peer, but the parser still treats every byte as hostile (a confused or
 * replaced host side must not crash the agent): each field is bounded before it is copied,
 * each count before anything is allocated for it, and the payload must be consumed exactly.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "base/alloc.h"
#include "base/macro.h"

#define FS_FLAGS_KNOWN   (B4_FS_BENEATH | B4_FS_NO_SYMLINKS)
#define EXEC_FLAGS_KNOWN (AGENT_EXEC_SHELL | AGENT_EXEC_CLEAR_ENV)

struct parse {
        struct agent_rd rd;
        struct agent_req *r;
        const char *why;
};

static int bad(struct parse *p, const char *why)
{
        p->why = why;
        return -EPROTO;
}

/* A str field copied out, NUL-terminated. */
static int take_str(struct parse *p, size_t max, bool nonempty, char **ret, const char *what)
{
        const char *s;
        size_t n;

        if (agent_rd_str(&p->rd, max, &s, &n) < 0 || (nonempty && n == 0))
                return bad(p, what);
        *ret = b4_strndup(s, n);
        return *ret ? 0 : -ENOMEM;
}

static int take_path(struct parse *p, char **ret)
{
        int r = take_str(p, AGENT_PATH_MAX, true, ret, "bad path");

        if (r >= 0 && (*ret)[0] != '/')
                return bad(p, "path not absolute");
        return r;
}

static int take_u32(struct parse *p, uint32_t *v, const char *what)
{
        return agent_rd_u32(&p->rd, v) < 0 ? bad(p, what) : 0;
}

static int take_u64(struct parse *p, uint64_t *v, const char *what)
{
        return agent_rd_u64(&p->rd, v) < 0 ? bad(p, what) : 0;
}

static int take_fsflags(struct parse *p)
{
        int r = take_u32(p, &p->r->fsflags, "truncated flags");

        if (r >= 0 && (p->r->fsflags & ~(uint32_t)FS_FLAGS_KNOWN))
                return bad(p, "unknown fs flags");
        return r;
}

/* A counted list of strings, each at most @max bytes; @n of them already bounded. */
static int take_strv(struct parse *p, uint32_t n, size_t max, bool nonempty, char ***ret)
{
        char **v = b4_calloc((size_t)n + 1, sizeof(char *));
        int r = 0;

        if (!v)
                return -ENOMEM;
        for (uint32_t i = 0; i < n && r >= 0; i++)
                r = take_str(p, max, nonempty, &v[i], "bad string in a list");
        *ret = v; /* freed by agent_req_clear() on failure too */
        return r;
}

static int parse_batch(struct parse *p)
{
        uint32_t n;
        int r = take_u32(p, &n, "truncated count");

        if (r < 0)
                return r;
        if (n > AGENT_BATCH_MAX || (size_t)n * 12 > p->rd.left)
                return bad(p, "too many files");
        p->r->reads = b4_calloc(n ? n : 1, sizeof(*p->r->reads));
        if (!p->r->reads)
                return -ENOMEM;
        for (uint32_t i = 0; i < n && r >= 0; i++) {
                char *path = NULL;
                r = take_u64(p, &p->r->reads[i].max_bytes, "truncated max");
                if (r >= 0)
                        r = take_path(p, &path);
                p->r->reads[i].path = path;
                p->r->n_reads = i + 1;
        }
        return r;
}

static int parse_walk(struct parse *p)
{
        uint32_t n;
        int r = take_u64(p, &p->r->max, "truncated max");

        if (r >= 0 && p->r->max > AGENT_WALK_MAX)
                return bad(p, "max_entries over the cap");
        if (r >= 0)
                r = take_path(p, &p->r->path);
        if (r >= 0)
                r = take_u32(p, &n, "truncated count");
        if (r >= 0 && n > AGENT_PRUNE_MAX)
                return bad(p, "too many prune names");
        if (r >= 0)
                r = take_strv(p, n, AGENT_NAME_MAX, true, &p->r->prune);
        for (char **s = p->r->prune; r >= 0 && s && *s; s++)
                if (strchr(*s, '/'))
                        return bad(p, "prune name with a slash");
        return r;
}

static int parse_exec(struct parse *p)
{
        struct agent_req *q = p->r;
        uint32_t argc = 0, envc = 0;
        int r = take_u32(p, &q->execflags, "truncated flags");

        if (r >= 0 && (q->execflags & ~(uint32_t)EXEC_FLAGS_KNOWN))
                return bad(p, "unknown exec flags");
        if (r >= 0)
                r = take_u64(p, &q->timeout_ms, "truncated timeout");
        if (r >= 0)
                r = take_u64(p, &q->output_cap, "truncated output cap");
        if (r >= 0 && (q->output_cap == 0 || q->output_cap > AGENT_OUTPUT_MAX))
                return bad(p, "output cap out of range");
        if (r >= 0)
                r = take_u32(p, &q->max_procs, "truncated max_procs");
        if (r >= 0)
                r = take_path(p, &q->cwd);
        if (r >= 0)
                r = take_u32(p, &argc, "truncated argc");
        if (r >= 0 && (argc == 0 || argc > AGENT_ARGS_MAX ||
                       ((q->execflags & AGENT_EXEC_SHELL) && argc != 1)))
                return bad(p, "bad argc");
        if (r >= 0)
                r = take_strv(p, argc, AGENT_FRAME_MAX, false, &q->argv);
        if (r >= 0)
                r = take_u32(p, &envc, "truncated envc");
        if (r >= 0 && envc > AGENT_ARGS_MAX - argc)
                return bad(p, "too many arguments and variables");
        if (r >= 0)
                r = take_strv(p, envc, AGENT_FRAME_MAX, true, &q->env);
        for (char **e = q->env; r >= 0 && e && *e; e++)
                if (!strchr(*e, '=') || **e == '=')
                        return bad(p, "environment entry is not NAME=value");
        if (r >= 0 && !(q->execflags & AGENT_EXEC_SHELL) && q->argv[0][0] == '\0')
                return bad(p, "empty program"); /* an empty shell command is sh's business */
        return r;
}

static int parse_hello(struct parse *p)
{
        uint32_t magic;
        int r = take_u32(p, &magic, "truncated hello");

        if (r >= 0 && magic != AGENT_MAGIC)
                return bad(p, "bad magic");
        if (r >= 0)
                r = take_u32(p, &p->r->min_version, "truncated hello");
        if (r >= 0)
                r = take_u32(p, &p->r->max_version, "truncated hello");
        return r;
}

static int parse_body(struct parse *p)
{
        struct agent_req *q = p->r;
        int r;

        switch ((enum agent_type)q->type) {
        case AGENT_HELLO:
                return parse_hello(p);
        case AGENT_LSTAT:
        case AGENT_REALPATH:
        case AGENT_MKDIR_P:
        case AGENT_REMOVE:
                return take_path(p, &q->path);
        case AGENT_STAT:
        case AGENT_LIST:
        case AGENT_TOUCH:
                r = take_fsflags(p);
                return r < 0 ? r : take_path(p, &q->path);
        case AGENT_READ:
        case AGENT_WRITE:
                r = take_fsflags(p);
                if (r >= 0)
                        r = take_u64(p, &q->max, "truncated size");
                if (r >= 0 && q->max > AGENT_FILE_MAX)
                        return q->type == AGENT_READ ? bad(p, "max_bytes over the cap")
                                                     : bad(p, "write over the cap");
                return r < 0 ? r : take_path(p, &q->path);
        case AGENT_READ_BATCH:
                return parse_batch(p);
        case AGENT_WALK:
                return parse_walk(p);
        case AGENT_SYMLINK:
                r = take_str(p, AGENT_PATH_MAX, true, &q->target, "bad target");
                return r < 0 ? r : take_path(p, &q->path);
        case AGENT_CHMOD:
                r = take_u32(p, &q->mode, "truncated mode");
                if (r >= 0 && q->mode > 07777)
                        return bad(p, "bad mode");
                return r < 0 ? r : take_path(p, &q->path);
        case AGENT_EXEC:
                return parse_exec(p);
        case AGENT_CANCEL:
                return 0;
        case AGENT_FATAL:
        case AGENT_OK:
        case AGENT_ERROR:
        case AGENT_STATR:
        case AGENT_PATH:
        case AGENT_DATA:
        case AGENT_FILE:
        case AGENT_NAMES:
        case AGENT_ENTRIES:
        case AGENT_DONE:
        case AGENT_STARTED:
        case AGENT_EXIT:
                break;
        }
        p->why = "unknown request type";
        return -EOPNOTSUPP;
}

int agent_req_parse(const struct agent_hdr *h,
                    const unsigned char *payload,
                    struct agent_req *ret,
                    const char **ret_why)
{
        struct parse p = { .rd = { .p = payload, .left = h->len }, .r = ret };
        int r;

        *ret = (struct agent_req){ .id = h->id, .type = h->type };
        p.why = "bad frame";
        if (h->flags != 0)
                r = bad(&p, "unknown frame flags");
        else if ((h->id == 0) != (h->type == AGENT_HELLO))
                r = bad(&p, "id 0 is the handshake's alone");
        else
                r = parse_body(&p);
        if (r >= 0 && agent_rd_end(&p.rd) < 0)
                r = bad(&p, "trailing bytes");
        if (r < 0) {
                agent_req_clear(ret);
                *ret = (struct agent_req){ .id = h->id, .type = h->type };
                *ret_why = r == -ENOMEM ? "out of memory" : p.why;
        }
        return r;
}

static void strv_free_n(char **v)
{
        for (char **s = v; s && *s; s++)
                free(*s);
        free(v);
}

void agent_req_clear(struct agent_req *r)
{
        free(r->path);
        free(r->target);
        for (size_t i = 0; i < r->n_reads; i++)
                free((char *)r->reads[i].path);
        free(r->reads);
        strv_free_n(r->prune);
        free(r->cwd);
        strv_free_n(r->argv);
        strv_free_n(r->env);
        *r = (struct agent_req){ 0 };
}
