/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fork_bomb's fork bomb (tests/docker/test-docker.c): one that cannot die out. Run in a
 * keeper as `pid-filler [SUPERVISOR]`, it forks a filler into a session of its own (stdio on
 * /dev/null) and exits 0 at once, so the command that started it returns. The filler forks
 * children that only pause() until fork() fails, and then keeps trying every millisecond for
 * as long as the keeper lives: no process of it ever exits, and a pid that frees anywhere in
 * the keeper is taken again. `:(){ :|:& };:` is not that: each of its processes exits when its
 * forks fail, and now and then the whole bomb dies out by itself.
 *
 * SUPERVISOR (the agent's: the command shell's $PPID) makes the filler start filling only once
 * what served the command is gone: that supervisor reaped and the agent (its parent) back below
 * the thread count it had while the command ran (the request's thread ended). So once the
 * keeper is at its pids limit, nothing of that command can free a pid any more. Without it (the
 * archive/exec fallback) the filler fills at once: the exec's shell has exited before its
 * caller hears that the command ended.
 *
 * Static, libc only (the test image has no libraries). Exit 1 when it cannot start.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MAX_MS 30000 /* for the command to be gone; then it gives up without filling */

static void sleep_ms(long ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* The field @key ("PPid:", "Threads:") of /proc/@pid/status, or -1 (gone, reaped). */
static long status_field(long pid, const char *key)
{
        char path[64], line[256];
        size_t klen = strlen(key);
        long v = -1;
        FILE *f;

        (void)snprintf(path, sizeof(path), "/proc/%ld/status", pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, klen) == 0) {
                        v = strtol(line + klen, NULL, 10);
                        break;
                }
        (void)fclose(f);
        return v;
}

/* Until @sup is reaped and @agent runs fewer than @threads threads. Return: 0, -1 timed out. */
static int await_served(long sup, long agent, long threads)
{
        for (long ms = 0; ms < WAIT_MAX_MS; ms++) {
                long t = status_field(agent, "Threads:");
                if (status_field(sup, "PPid:") < 0 && t < threads)
                        return 0;
                sleep_ms(1);
        }
        return -1;
}

static _Noreturn void fill(void)
{
        for (;;) {
                pid_t c = fork();
                if (c == 0)
                        for (;;)
                                pause();
                if (c < 0)
                        sleep_ms(1);
        }
}

int main(int argc, char **argv)
{
        long sup = argc > 1 ? strtol(argv[1], NULL, 10) : 0, agent = -1, threads = -1;
        int null;
        pid_t c;

        if (sup > 0) { /* read while the command runs: the request's thread is among these */
                agent = status_field(sup, "PPid:");
                threads = status_field(agent, "Threads:");
                if (agent <= 0 || threads <= 0) {
                        fprintf(stderr, "pid-filler: no agent above supervisor %ld\n", sup);
                        return 1;
                }
        }
        c = fork();
        if (c < 0) {
                perror("pid-filler: fork");
                return 1;
        }
        if (c > 0)
                return 0;
        (void)setsid();
        null = open("/dev/null", O_RDWR);
        if (null >= 0) {
                (void)dup2(null, 0);
                (void)dup2(null, 1);
                (void)dup2(null, 2);
                if (null > 2)
                        (void)close(null);
        }
        if (sup > 0 && await_served(sup, agent, threads) < 0)
                return 1;
        fill();
}
