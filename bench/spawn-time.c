/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/spawn-time N CMD [ARGS...]: run CMD N times one after the other (posix_spawn,
 * stdout and stderr to /dev/null; a failing run stops it) and print the median and the
 * minimum wall time, from spawn to reaped, and the median CPU time (user + system) of CMD
 * itself, in milliseconds. The CPU time moves little with machine load; it leaves out
 * other processes CMD waits for (a keeper). bench/cli-start.sh uses it.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double tv_ms(const struct timeval *tv)
{
        return (double)tv->tv_sec * 1e3 + (double)tv->tv_usec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
        posix_spawn_file_actions_t fa;
        double *t, *cpu;
        long n;

        if (argc < 3 || (n = strtol(argv[1], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: spawn-time N CMD [ARGS...]\n");
                return 2;
        }
        t = calloc((size_t)n, sizeof(*t));
        cpu = calloc((size_t)n, sizeof(*cpu));
        if (!t || !cpu)
                return 1;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        for (long i = 0; i < n; i++) {
                struct rusage ru;
                pid_t pid;
                int st;
                double s = now_ms();

                if (posix_spawnp(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0) {
                        perror(argv[2]);
                        return 1;
                }
                if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                        fprintf(stderr, "spawn-time: %s failed (status %d)\n", argv[2], st);
                        return 1;
                }
                t[i] = now_ms() - s;
                cpu[i] = tv_ms(&ru.ru_utime) + tv_ms(&ru.ru_stime);
        }
        qsort(t, (size_t)n, sizeof(*t), cmp_double);
        qsort(cpu, (size_t)n, sizeof(*cpu), cmp_double);
        printf("wall median %.2f ms, min %.2f ms; cpu median %.2f ms (%ld runs)\n", t[n / 2], t[0],
               cpu[n / 2], n);
        free(t);
        free(cpu);
        return 0;
}
