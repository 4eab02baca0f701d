/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/image-bench: native on an imported image against native on the host image, in one
 * run (bench/image.sh). Cold acquire to the first `true` and destroy, interleaved host /
 * image; then N threads held on the image, with the disk the state dir's images/ and
 * native/ trees use before and after (st_blocks, not crossing mounts: a thread's root is
 * bind mounts, so only what is written under native/ counts). Prints "name value unit"
 * lines. Not a test: nothing here pass/fails.
 * Usage: image-bench /abs/state-dir IMAGE [ROUNDS] [HELD]
 */

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "b4box/b4.h"

static double now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static double p50(double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        return v[n / 2];
}

static void die(const char *what, const struct b4_error *err)
{
        fprintf(stderr, "image-bench: %s: %s\n", what, err ? err->msg : "");
        exit(1);
}

static struct b4_provider *provider(const char *state, const char *scope, const char *image)
{
        struct b4_provider_config cfg = { .type = (char *)"native",
                                          .scope = (char *)scope,
                                          .image = (char *)image,
                                          .state_dir = (char *)state };
        struct b4_provider *p = NULL;
        struct b4_error err = { 0 };

        if (b4_provider_new(&cfg, &p, &err) < 0)
                die("provider", &err);
        return p;
}

static struct b4_sandbox *acquire(struct b4_provider *p, const char *id)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = id, .policy = &pol };
        struct b4_exec_req ex = { .command = "true" };
        struct b4_exec_result res = { 0 };
        struct b4_sandbox *sb = NULL;
        struct b4_error err = { 0 };

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        if (b4_provider_acquire(p, &req, &sb, &err) < 0)
                die("acquire", &err);
        if (b4_sandbox_exec(sb, &ex, &res, &err) < 0 || res.exit_code != 0)
                die("exec", &err);
        b4_exec_result_clear(&res);
        return sb;
}

static double cold_us(struct b4_provider *p, const char *id)
{
        struct b4_error err = { 0 };
        double t0 = now_us();
        struct b4_sandbox *sb = acquire(p, id);
        double t = now_us() - t0;

        b4_sandbox_unref(sb);
        if (b4_provider_destroy(p, id, &err) < 0)
                die("destroy", &err);
        return t;
}

static unsigned long long disk_total;

static int add_blocks(const char *path, const struct stat *st, int flag, struct FTW *f)
{
        (void)path, (void)flag, (void)f;
        disk_total += (unsigned long long)st->st_blocks * 512;
        return 0;
}

static unsigned long long disk(const char *state, const char *sub)
{
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", state, sub);
        disk_total = 0;
        (void)nftw(path, add_blocks, 64, FTW_PHYS | FTW_MOUNT);
        return disk_total;
}

int main(int argc, char **argv)
{
        int rounds = argc > 3 ? atoi(argv[3]) : 30, held = argc > 4 ? atoi(argv[4]) : 100;
        struct b4_provider *host, *img;
        struct b4_sandbox **sbs;
        struct b4_error err = { 0 };
        double *vh, *vi;
        char id[64];

        if (argc < 3 || argv[1][0] != '/' || rounds < 1 || held < 1) {
                fprintf(stderr, "usage: image-bench /abs/state-dir IMAGE [ROUNDS] [HELD]\n");
                return 2;
        }
        host = provider(argv[1], "bench-host", "host");
        img = provider(argv[1], "bench-img", argv[2]);
        vh = calloc((size_t)rounds, sizeof(*vh));
        vi = calloc((size_t)rounds, sizeof(*vi));
        sbs = calloc((size_t)held, sizeof(*sbs));
        (void)cold_us(host, "warmup"), (void)cold_us(img, "warmup");
        for (int i = 0; i < rounds; i++) {
                snprintf(id, sizeof(id), "cold-%d", i);
                vh[i] = cold_us(host, id);
                vi[i] = cold_us(img, id);
        }
        printf("cold_acquire_host_p50 %.0f us\ncold_acquire_image_p50 %.0f us\n", p50(vh, rounds),
               p50(vi, rounds));
        printf("disk_images %llu bytes\ndisk_native_before %llu bytes\n", disk(argv[1], "images"),
               disk(argv[1], "native"));
        for (int i = 0; i < held; i++) {
                snprintf(id, sizeof(id), "held-%d", i);
                sbs[i] = acquire(img, id);
        }
        printf("threads_held %d\ndisk_images_held %llu bytes\ndisk_native_held %llu bytes\n", held,
               disk(argv[1], "images"), disk(argv[1], "native"));
        for (int i = 0; i < held; i++) {
                snprintf(id, sizeof(id), "held-%d", i);
                b4_sandbox_unref(sbs[i]);
                if (b4_provider_destroy(img, id, &err) < 0)
                        die("destroy", &err);
        }
        b4_provider_free(host);
        b4_provider_free(img);
        free(vh), free(vi), free(sbs);
        return 0;
}
