/* SPDX-License-Identifier: Apache-2.0 */
#include "proc-util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "fd-util.h"
#include "macro.h"

int proc_starttime(pid_t pid, uint64_t *ret)
{
        cleanup_free char *buf = NULL;
        char path[64];
        size_t len;
        unsigned long long st;
        char *p;
        int r;

        (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        r = read_file_at(AT_FDCWD, path, 4096, &buf, &len);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        p = strrchr(buf, ')');
        /* after ")": state(3) ... starttime is field 22, i.e. the 20th after the state */
        if (!p || sscanf(p + 2,
                         "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                         "%*d %*d %*d %*d %llu",
                         &st) != 1)
                return -EIO;
        *ret = st;
        return 0;
}
