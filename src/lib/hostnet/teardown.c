/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What is left of a thread's network after release (internal.h: hostnet_gone()): its veth
 * (deleted with the namespace, or about to be), its elements, its subnet claim. Once the
 * namespace is dead none of it reaches anything (the elements are keyed by a dead ifindex,
 * the claim only holds an address back), but every delete waits for the kernel: an
 * nf_tables transaction that deletes anything waits for an RCU grace period (8-20 ms on
 * this 2-vCPU host, one element or a thousand), and so does a veth delete. So release
 * writes a record and hands the deletes to a job.
 *   record  run/.netgone-<n>-<ifindex>: subnet n, host veth ifindex (0: gone already), the
 *           boot id and the elements (nft-elems.h's record) inside; a record of another boot
 *           names nothing that exists (ifindexes restart at boot) and is only unlinked.
 *           Written (not fsync()ed) before release returns, unlinked
 *           by the job when all of it is gone, so a crash at any point leaves it to
 *           hostnet_sweep(). A job holds an exclusive flock on its record: two never run one.
 *   job     the veth by ifindex (never by name: a new thread of the same id may have made a
 *           veth of that name already) when it is still there, the elements in one
 *           transaction, then the claim (no new thread gets the address while masq4 names
 *           it), then the record.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/macro.h"
#include "internal.h"
#include "netlink.h"
#include "nft-elems.h"

#define GONE_PREFIX "netgone-"

struct job {
        int run_fd, claims_fd; /* owned */
        char name[64];         /* the record's, in run_fd */
        unsigned n, ifindex;
        bool unrecorded; /* run from @elems: the record could not be written */
        char *elems;     /* owned */
};

static void job_free(struct job *j)
{
        safe_close(j->run_fd);
        safe_close(j->claims_fd);
        free(j->elems);
        free(j);
}

/* Delete host link @ifindex if it is still a b4box veth. */
static void veth_delete(unsigned ifindex)
{
        char name[IF_NAMESIZE];
        struct nl_sock *nl;

        if (ifindex == 0 || !if_indextoname(ifindex, name) || strncmp(name, "b4h", 3) != 0)
                return;
        nl = rtnl_open();
        if (nl)
                (void)rtnl_link_del_index(nl, ifindex);
        rtnl_close(nl);
}

/* The deletes of @j, under the lock of its record (or without one, from @j->elems). */
static void job_run(const struct job *j)
{
        cleanup_close int fd = openat(j->run_fd, j->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        cleanup_free char *text = NULL;
        struct nft_elems del = { 0 };
        const char *body;
        char claim[32];
        struct stat st;
        size_t len;

        if (fd >= 0) {
                while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
                        ;
                if (fstat(fd, &st) < 0 || st.st_nlink == 0)
                        return; /* another job has done it */
                if (read_file_at(j->run_fd, j->name, 1u << 22, &text, &len) < 0)
                        text = NULL;
        } else if (!j->unrecorded) {
                return;
        }
        body = text ? hostnet_record_body(text) : j->elems ? j->elems : "";
        if (body) { /* this boot's */
                veth_delete(j->ifindex);
                if (nft_elems_parse(body, &del) >= 0)
                        (void)nft_elems_commit(&del, NULL, NULL);
                nft_elems_release(&del);
                (void)snprintf(claim, sizeof(claim), "net-%u", j->n);
                if (j->claims_fd >= 0)
                        (void)unlinkat(j->claims_fd, claim, 0);
        }
        if (fd >= 0)
                (void)unlinkat(j->run_fd, j->name, 0);
}

static void *job_thread(void *data)
{
        job_run(data);
        job_free(data);
        return NULL;
}

/* Whether this process has one thread (/proc/self/status). */
static bool single_threaded(void)
{
        cleanup_free char *status = NULL;
        size_t len;

        return read_file_at(AT_FDCWD, "/proc/self/status", 1u << 16, &status, &len) >= 0 &&
               strstr(status, "\nThreads:\t1\n") != NULL;
}

/* Close every descriptor from 3 up but @a and @b. */
static void close_all_but(int a, int b)
{
        int lo = a < b ? a : b, hi = a < b ? b : a;
        unsigned from = 3;

        for (int keep = lo, i = 0; i < 2; keep = hi, i++) {
                if (keep < 3 || (unsigned)keep < from)
                        continue;
                if ((unsigned)keep > from)
                        (void)close_range(from, (unsigned)keep - 1, 0);
                from = (unsigned)keep + 1;
        }
        (void)close_range(from, ~0u, 0);
}

/* A grandchild with stdio on /dev/null and no other inherited descriptor (a caller reading
 * our stdout sees EOF at once) runs @j; its parent is reaped here at once, so nobody waits and
 * no zombie stays. Return: 0, or -errno when there is no grandchild (then nothing ran). */
static int job_fork(const struct job *j)
{
        int status, null_fd;
        pid_t pid = fork();

        if (pid == 0) {
                if (fork() != 0)
                        _exit(0);
                null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null_fd < 0 || dup3(null_fd, STDIN_FILENO, 0) < 0 ||
                    dup3(null_fd, STDOUT_FILENO, 0) < 0 || dup3(null_fd, STDERR_FILENO, 0) < 0)
                        _exit(1);
                close_all_but(j->run_fd, j->claims_fd);
                job_run(j);
                _exit(0);
        }
        if (pid < 0)
                return -errno;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return 0;
}

/* Run @j (taken) in the background, or here when no thread or process can be made: a fork
 * of a threaded process (the server) may copy a lock another thread holds, so a thread runs
 * it there. */
static void job_start(struct job *j)
{
        pthread_attr_t attr;
        pthread_t tid;
        int r;

        if (single_threaded()) {
                if (job_fork(j) < 0)
                        job_run(j);
                job_free(j);
                return;
        }
        r = pthread_attr_init(&attr);
        if (r == 0) {
                (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = pthread_create(&tid, &attr, job_thread, j);
                (void)pthread_attr_destroy(&attr);
        }
        if (r != 0) {
                job_run(j);
                job_free(j);
        }
}

/* This boot's id (36 characters), or "" when /proc does not say. */
static void boot_id(char out[40])
{
        cleanup_free char *id = NULL;
        size_t len;

        out[0] = '\0';
        if (read_file_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 64, &id, &len) >= 0 &&
            len >= 36)
                (void)snprintf(out, 40, "%.36s", id);
}

int hostnet_record_write(int dirfd, const char *name, const char *text)
{
        char tmp[128], boot[40], head[48];
        int fd, r;

        boot_id(boot);
        (void)snprintf(head, sizeof(head), "boot %s\n", boot);
        (void)snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
        (void)unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, head, strlen(head));
        if (r >= 0)
                r = write_all(fd, text, strlen(text));
        (void)close(fd);
        if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

const char *hostnet_record_body(const char *record)
{
        char boot[40], head[48];
        size_t n;

        boot_id(boot);
        n = (size_t)snprintf(head, sizeof(head), "boot %s\n", boot);
        return boot[0] && strncmp(record, head, n) == 0 ? record + n : NULL;
}

static struct job *job_new(const struct hostnet *hn, unsigned n, unsigned ifindex)
{
        struct job *j = b4_calloc(1, sizeof(*j));

        if (!j)
                return NULL;
        j->run_fd = fcntl(hn->run_fd, F_DUPFD_CLOEXEC, 3);
        j->claims_fd = hostnet_claims_open(hn);
        j->n = n;
        j->ifindex = ifindex;
        (void)snprintf(j->name, sizeof(j->name), "." GONE_PREFIX "%u-%u", n, ifindex);
        if (j->run_fd < 0) {
                job_free(j);
                return NULL;
        }
        return j;
}

void hostnet_gone(
        const struct hostnet *hn, unsigned n, unsigned ifindex, const char *elems, bool wait)
{
        const char *text = elems ? elems : "";
        struct job *j = job_new(hn, n, ifindex);

        if (!j)
                return; /* nothing recorded: the elements are inert, the claim stays */
        if (hostnet_record_write(hn->run_fd, j->name, text) < 0) {
                /* no record: nothing may outlive this call */
                j->elems = b4_strdup(text);
                j->unrecorded = true;
                wait = true;
        }
        if (wait) {
                job_run(j);
                job_free(j);
                return;
        }
        job_start(j);
}

void hostnet_sweep(const struct hostnet *hn)
{
        int fd = fcntl(hn->run_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;

        if (!d) {
                safe_close(fd);
                return;
        }
        rewinddir(d); /* the duplicate shares run_fd's offset: an earlier scan's end */
        while ((de = readdir(d))) {
                unsigned n, ifindex;
                char tail;
                struct job *j;

                if (sscanf(de->d_name, "." GONE_PREFIX "%u-%u%c", &n, &ifindex, &tail) != 2)
                        continue;
                j = job_new(hn, n, ifindex);
                if (j) {
                        job_run(j);
                        job_free(j);
                }
        }
        (void)closedir(d);
}
