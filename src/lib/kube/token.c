/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bearer token source: a static token or a file (a projected service-account token the
 * kubelet rotates, a kubeconfig tokenFile). The file is re-read when it changed (its dev,
 * inode, size or mtime: the kubelet swaps it by renaming a symlinked directory), when the
 * last read is older than a minute (client-go's cached file token source), and after a 401.
 */

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "kube/kube-internal.h"

static void free_secret(char *s)
{
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
}

int kube_token_init(struct kube_token *t, const char *file, const char *value)
{
        *t = (struct kube_token){ 0 };
        (void)pthread_mutex_init(&t->lock, NULL);
        t->file = file ? b4_strdup(file) : NULL;
        t->value = value && !file ? b4_strdup(value) : NULL;
        if ((file && !t->file) || (value && !file && !t->value)) {
                kube_token_release(t);
                return -ENOMEM;
        }
        return 0;
}

void kube_token_release(struct kube_token *t)
{
        free(t->file);
        free_secret(t->value);
        (void)pthread_mutex_destroy(&t->lock);
        *t = (struct kube_token){ 0 };
}

static bool changed(const struct kube_token *t, const struct stat *st)
{
        return st->st_dev != t->dev || st->st_ino != t->ino || st->st_size != t->size ||
               st->st_mtim.tv_sec != t->mtime.tv_sec || st->st_mtim.tv_nsec != t->mtime.tv_nsec;
}

/* Read the file into t->value (lock held). */
static int reread(struct kube_token *t, const struct stat *st, struct b4_error *err)
{
        char *buf = NULL;
        size_t len = 0;
        int r = read_file_at(AT_FDCWD, t->file, KUBE_TOKEN_MAX, &buf, &len);

        if (r < 0)
                return b4_error_set(err, r == -EFBIG ? -EINVAL : r,
                                    "cannot read the token file "
                                    "'%s': %s",
                                    t->file, r == -EFBIG ? "too large" : strerror(-r));
        while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
                buf[--len] = '\0';
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
                        free_secret(buf);
                        return b4_error_set(err, -EINVAL,
                                            "the token file '%s' holds a control "
                                            "character",
                                            t->file);
                }
        if (len == 0) {
                free(buf);
                return b4_error_set(err, -EINVAL, "the token file '%s' is empty", t->file);
        }
        free_secret(t->value);
        t->value = buf;
        t->dev = st->st_dev;
        t->ino = st->st_ino;
        t->size = st->st_size;
        t->mtime = st->st_mtim;
        t->read_ms = now_msec();
        t->stale = false;
        return 0;
}

static int get_locked(struct kube_token *t, char **ret, struct b4_error *err)
{
        struct stat st;
        int r;

        if (t->file) {
                if (stat(t->file, &st) < 0) {
                        r = -errno;
                        return b4_error_set(err, r, "cannot read the token file '%s': %s", t->file,
                                            strerror(-r));
                }
                if (t->stale || !t->value || changed(t, &st) ||
                    now_msec() - t->read_ms >= KUBE_TOKEN_REREAD_MS) {
                        r = reread(t, &st, err);
                        if (r < 0)
                                return r;
                }
        }
        *ret = NULL;
        if (t->value && !(*ret = b4_strdup(t->value)))
                return b4_error_set(err, -ENOMEM, "out of memory");
        return 0;
}

int kube_token_get(struct kube_token *t, char **ret, struct b4_error *err)
{
        int r;

        (void)pthread_mutex_lock(&t->lock);
        r = get_locked(t, ret, err);
        (void)pthread_mutex_unlock(&t->lock);
        return r;
}

void kube_token_invalidate(struct kube_token *t)
{
        (void)pthread_mutex_lock(&t->lock);
        t->stale = true;
        (void)pthread_mutex_unlock(&t->lock);
}
