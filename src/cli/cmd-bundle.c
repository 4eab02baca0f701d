/* SPDX-License-Identifier: Apache-2.0 */
/*
 * b4box bundle: make and check source bundles (reference §7.1) without a server.
 *
 *   b4box bundle create DIR [--include-from FILE] [--exclude-dir D]... -o OUT
 *   b4box bundle verify FILE
 *
 * `create` captures DIR like a static workspace definition (regular files only, no links,
 * re-checked for change); --include-from names the exact inventory (one path per line), and
 * without it every regular file is taken. Both print the bundle's digest on stdout.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "b4box/b4.h"
#include "b4box/bundle.h"
#include "b4box/config.h"

#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "cli.h"

#define BUNDLE_FILE_MAX (96u * 1024u * 1024u)

/* One path per line; blank lines and lines starting with '#' are skipped. */
static int read_list(const char *path, char ***ret)
{
        cleanup_free char *text = NULL;
        cleanup_strv char **l = NULL;
        size_t len = 0;
        int r;

        r = read_file_at(AT_FDCWD, path, 16u * 1024u * 1024u, &text, &len);
        if (r < 0) {
                cli_error("cannot read '%s': %s", path, strerror(-r));
                return r;
        }
        l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (char *s = text, *nl; s && *s; s = nl ? nl + 1 : NULL) {
                nl = strchr(s, '\n');
                if (nl)
                        *nl = '\0';
                if (*s && *s != '#' && strv_extend(&l, s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int write_out(const char *path, const char *json, size_t len)
{
        cleanup_close int fd = -EBADF;
        int r;

        if (strcmp(path, "-") == 0)
                return write_all(STDOUT_FILENO, json, len);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        r = write_all(fd, json, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        return r;
}

struct create_args {
        const char *dir, *out;
        char **include;  /* owned, NULL = everything */
        char **excludes; /* owned */
        bool json;
};

/* --json: {"digest": D, "files": N, "bytes": N} on stdout. */
static void print_json(const char *digest, size_t n_files, uint64_t bytes)
{
        printf("{\"digest\": \"%s\", \"files\": %zu, \"bytes\": %llu}\n", digest, n_files,
               (unsigned long long)bytes);
}

static int parse_create(int argc, char **argv, struct create_args *a)
{
        static const struct option opts[] = {
                { "include-from", required_argument, NULL, 'i' },
                { "exclude-dir", required_argument, NULL, 'x' },
                { "output", required_argument, NULL, 'o' },
                { "json", no_argument, NULL, 'j' },
                {},
        };
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
                if (c == 'i' && (strv_free(a->include), read_list(optarg, &a->include) < 0))
                        return -EINVAL;
                else if (c == 'x' && strv_extend(&a->excludes, optarg) < 0)
                        return -ENOMEM;
                else if (c == 'o')
                        a->out = optarg;
                else if (c == 'j')
                        a->json = true;
                else if (c == '?')
                        return -EINVAL;
        }
        if (optind + 1 != argc || !a->out) {
                cli_error("bundle create needs DIR and -o OUT");
                return -EINVAL;
        }
        a->dir = argv[optind];
        return 0;
}

static int bundle_create(int argc, char **argv)
{
        struct create_args a = { 0 };
        struct b4_captured_workspace *w = NULL;
        struct b4_error err = { 0 };
        char *json = NULL;
        size_t len = 0;
        int r, ret = CLI_EXIT_FAILED;

        if (parse_create(argc, argv, &a) < 0) {
                strv_free(a.include);
                strv_free(a.excludes);
                return CLI_USAGE;
        }
        struct b4_workspace_def def = {
                .directory = (char *)".",
                .include = a.include,
                .exclude_directories = a.excludes,
        };
        r = b4_workspace_capture(a.dir, &def, NULL, &w, &err);
        if (r >= 0)
                r = b4_bundle_format(w->source, &json, &len, &err);
        if (r < 0)
                cli_fail(&err);
        else if ((r = write_out(a.out, json, len)) < 0)
                cli_error("cannot write '%s': %s", a.out, strerror(-r));
        else {
                if (a.json)
                        print_json(w->source->digest, w->source->n_files, w->source->total_bytes);
                else
                        printf("%s\n", w->source->digest);
                ret = CLI_EXIT_OK;
        }
        free(json);
        b4_captured_workspace_free(w);
        strv_free(a.include);
        strv_free(a.excludes);
        return ret;
}

static int bundle_verify(int argc, char **argv)
{
        cleanup_free char *text = NULL;
        struct b4_bundle *b = NULL;
        struct b4_error err = { 0 };
        size_t len = 0;
        int r;

        bool json = argc == 3 && strcmp(argv[2], "--json") == 0;

        if (argc == 3 && strcmp(argv[1], "--json") == 0)
                json = true, argv[1] = argv[2];
        if (argc != 2 && !json) {
                cli_error("bundle verify needs exactly one FILE");
                return CLI_USAGE;
        }
        r = read_file_at(AT_FDCWD, argv[1], BUNDLE_FILE_MAX, &text, &len);
        if (r < 0) {
                cli_error("cannot read '%s': %s", argv[1],
                          r == -EFBIG ? "larger than 96 MiB" : strerror(-r));
                return CLI_EXIT_FAILED;
        }
        r = b4_bundle_parse(text, len, &b, &err);
        if (r < 0)
                return cli_fail(&err);
        if (json)
                print_json(b->digest, b->n_files, b->total_bytes);
        else {
                printf("%s\n", b->digest);
                fprintf(stderr, "b4box: bundle ok: %zu files, %llu bytes\n", b->n_files,
                        (unsigned long long)b->total_bytes);
        }
        b4_bundle_free(b);
        return CLI_EXIT_OK;
}

int cmd_bundle(int argc, char **argv, const struct cli_ctx *ctx)
{
        if (argc >= 2 && strcmp(argv[1], "create") == 0)
                return bundle_create(argc - 1, argv + 1);
        if (argc >= 2 && strcmp(argv[1], "verify") == 0)
                return bundle_verify(argc - 1, argv + 1);
        cli_error("bundle needs 'create' or 'verify'");
        return CLI_USAGE;
}
