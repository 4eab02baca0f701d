/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers for the test binaries. */

#include "b4-test.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *b4_test_tmpdir(void)
{
        const char *base = secure_getenv("TMPDIR");
        char *path = NULL;

        if (asprintf(&path, "%s/b4test.XXXXXX", base ? base : "/tmp") < 0)
                return NULL;
        if (!mkdtemp(path)) {
                free(path);
                return NULL;
        }
        return path;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)ftw;
        if (flag == FTW_DP)
                (void)rmdir(p);
        else
                (void)unlink(p);
        return 0;
}

void b4_test_rmrf(const char *path)
{
        if (path)
                (void)nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

int b4_test_in_child(int (*fn)(void *arg), void *arg, int *ret_status)
{
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0)
                _exit(fn(arg));
        if (waitpid(pid, ret_status, 0) < 0)
                return -errno;
        return 0;
}

bool b4_test_is_root(void)
{
        return geteuid() == 0;
}

int b4_test_write(const char *path, const char *data)
{
        FILE *f = fopen(path, "we");

        if (!f)
                return -errno;
        (void)fputs(data, f);
        return fclose(f) == 0 ? 0 : -errno;
}
