/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libarchive glue. Reading pulls the tar straight from the HTTP stream, so a caller that
 * stops (a bounded read past its cap, a walk past its entry limit) stops the transfer too.
 * Writing builds a small pax archive in memory for PUT /archive; names are written as their
 * raw bytes (hdrcharset=BINARY), so no locale is involved, and read back as UTF-8 (Docker's
 * Go writer puts non-ASCII names in pax records, which are UTF-8).
 */

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "docker/docker.h"
#include "http/http.h"

#define READ_CHUNK (64u * 1024)

struct pull {
        struct http_stream *s;
        uint64_t budget; /* bytes left before the transfer is refused; UINT64_MAX = none */
        char buf[READ_CHUNK];
};

static la_ssize_t pull_read(struct archive *a, void *userdata, const void **ret)
{
        struct pull *p = userdata;
        struct b4_error err = { 0 };
        ssize_t n = http_stream_read(p->s, p->buf, sizeof(p->buf), 0, -EBADF, &err);

        if (n < 0) {
                archive_set_error(a, (int)-n, "%s", err.msg);
                return -1;
        }
        if ((uint64_t)n > p->budget) {
                archive_set_error(a, E2BIG, "archive larger than its budget");
                return -1;
        }
        if (p->budget != UINT64_MAX)
                p->budget -= (uint64_t)n;
        *ret = p->buf;
        return n;
}

static int pull_close(struct archive *a, void *userdata)
{
        free(userdata);
        return ARCHIVE_OK;
}

int tar_reader_open(struct http_stream *s, struct archive **ret, struct b4_error *err)
{
        return tar_reader_open_budget(s, UINT64_MAX, ret, err);
}

int tar_reader_open_budget(struct http_stream *s,
                           uint64_t budget,
                           struct archive **ret,
                           struct b4_error *err)
{
        struct archive *a = archive_read_new();
        struct pull *p;

        if (!a)
                return b4_error_set(err, -ENOMEM, "out of memory");
        p = b4_calloc(1, sizeof(*p));
        if (!p) {
                archive_read_free(a);
                return b4_error_set(err, -ENOMEM, "out of memory");
        }
        p->s = s;
        p->budget = budget;
        (void)archive_read_support_format_tar(a);
        if (archive_read_open(a, p, NULL, pull_read, pull_close) != ARCHIVE_OK) {
                int r = b4_error_set(err, -EIO, "cannot read the archive: %s",
                                     archive_error_string(a));
                archive_read_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

void tar_reader_free(struct archive *a)
{
        if (a)
                archive_read_free(a);
}

struct tar_builder {
        struct archive *a;
        struct strbuf out;
};

static la_ssize_t build_write(struct archive *a, void *userdata, const void *buf, size_t n)
{
        struct tar_builder *t = userdata;

        if (strbuf_add(&t->out, buf, n) < 0) {
                archive_set_error(a, ENOMEM, "out of memory");
                return -1;
        }
        return (la_ssize_t)n;
}

int tar_builder_new(struct tar_builder **ret)
{
        struct tar_builder *t = b4_calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        strbuf_init(&t->out, STRBUF_UNLIMITED);
        t->a = archive_write_new();
        if (!t->a || archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
            archive_write_set_options(t->a, "hdrcharset=BINARY") != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(t->a, 1) != ARCHIVE_OK ||
            archive_write_open(t->a, t, NULL, build_write, NULL) != ARCHIVE_OK) {
                tar_builder_free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

static int add(struct tar_builder *t,
               const char *name,
               mode_t type,
               unsigned mode,
               const void *data,
               size_t len,
               uid_t uid,
               gid_t gid)
{
        struct archive_entry *e = archive_entry_new();
        int r = 0;

        if (!e)
                return -ENOMEM;
        archive_entry_copy_pathname(e, name); /* raw bytes: hdrcharset=BINARY */
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, mode);
        archive_entry_set_uid(e, uid);
        archive_entry_set_gid(e, gid);
        archive_entry_set_size(e, (la_int64_t)len);
        archive_entry_set_mtime(e, time(NULL), 0);
        if (archive_write_header(t->a, e) != ARCHIVE_OK)
                r = -EIO;
        if (r == 0 && len > 0 && archive_write_data(t->a, data, len) != (la_ssize_t)len)
                r = -EIO;
        archive_entry_free(e);
        return r;
}

int tar_builder_file(struct tar_builder *t,
                     const char *name,
                     const void *data,
                     size_t len,
                     unsigned mode,
                     uid_t uid,
                     gid_t gid)
{
        return add(t, name, AE_IFREG, mode & 07777, data, len, uid, gid);
}

int tar_builder_finish(struct tar_builder *t, const void **ret, size_t *ret_len)
{
        if (archive_write_close(t->a) != ARCHIVE_OK)
                return -EIO;
        *ret = t->out.buf ? t->out.buf : "";
        *ret_len = t->out.len;
        return 0;
}

struct tar_builder *tar_builder_free(struct tar_builder *t)
{
        if (!t)
                return NULL;
        if (t->a)
                archive_write_free(t->a);
        strbuf_release(&t->out);
        free(t);
        return NULL;
}
