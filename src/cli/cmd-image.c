/* SPDX-License-Identifier: Apache-2.0 */
/* b4box image import|ls|inspect|rm: the image store under the state dir (docs/images.md). */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "b4box/error.h"

#include "base/fd-util.h"
#include "base/macro.h"
#include "base/strv.h"
#include "cli.h"
#include "docker/docker.h"
#include "image/image.h"
#include "json/json.h"

static struct jv *info_json(const struct image_info *i)
{
        return jv_pack("{s:s, s:o, s:o, s:s?, s:s?, s:s}", "id", i->digest, "refs",
                       jv_string_array_new(i->refs), "env", jv_string_array_new(i->env),
                       "workingDir", i->working_dir, "user", i->user, "root", i->root);
}

static int print_json(struct jv *v)
{
        cleanup_free char *text = NULL;

        if (!v || jv_dump(v, 0, &text) < 0) {
                jv_unref(v);
                cli_error("out of memory");
                return CLI_EXIT_FAILED;
        }
        jv_unref(v);
        puts(text);
        return CLI_EXIT_OK;
}

/* --from-docker: the daemon's `docker save` archive, kept in an unnamed file of the state
 * dir's filesystem (where its root is unpacked next) and imported from /proc/self/fd. */
static int import_from_docker(const char *state,
                              const char *host,
                              const char *ref,
                              const char *name,
                              char digest[7 + 64 + 1],
                              struct b4_error *err)
{
        struct docker_client *d = NULL;
        char path[64];
        int fd, r;

        if (!image_ref_valid(ref))
                return b4_error_set(err, -EINVAL, "'%s' is not an image reference", ref);
        if (mkdir(state, 0700) < 0 && errno != EEXIST)
                return b4_error_set(err, -errno, "cannot make the state dir '%s'", state);
        fd = open(state, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return b4_error_set(err, -errno, "cannot make a temporary file in '%s'", state);
        r = docker_client_new(host, &d, err);
        if (r >= 0)
                r = docker_image_save(d, ref, fd, err);
        docker_client_free(d);
        (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if (r >= 0)
                r = image_import(state, path, name ? name : ref, digest, err);
        safe_close(fd);
        return r;
}

static int do_import(int argc, char **argv, const char *state, bool json)
{
        const char *file = NULL, *name = NULL, *from = NULL, *host = NULL;
        struct b4_error err = { 0 };
        char digest[7 + 64 + 1];
        int r;

        for (int i = 2; i < argc; i++) {
                if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
                        name = argv[++i];
                else if (strcmp(argv[i], "--from-docker") == 0 && i + 1 < argc)
                        from = argv[++i];
                else if (strcmp(argv[i], "--docker-host") == 0 && i + 1 < argc)
                        host = argv[++i];
                else if (strcmp(argv[i], "--json") == 0)
                        continue;
                else if (!file && argv[i][0] != '-')
                        file = argv[i];
                else
                        return CLI_USAGE;
        }
        if (!file == !from || (host && !from))
                return CLI_USAGE;
        r = from ? import_from_docker(state, host, from, name, digest, &err)
                 : image_import(state, file, name, digest, &err);
        if (r < 0)
                return cli_fail(&err);
        if (json)
                return print_json(jv_pack("{s:s}", "id", digest));
        puts(digest);
        return CLI_EXIT_OK;
}

static int do_ls(const char *state, bool json)
{
        struct image_info *l = NULL;
        struct b4_error err = { 0 };
        struct jv *arr;
        size_t n = 0;

        if (image_list(state, &l, &n, &err) < 0)
                return cli_fail(&err);
        if (json) {
                arr = jv_array_new();
                for (size_t i = 0; arr && i < n; i++)
                        if (jv_array_append_new(arr, info_json(&l[i])) < 0)
                                arr = jv_unref(arr);
                image_infos_free(l, n);
                return print_json(jv_pack("{s:o}", "images", arr));
        }
        printf("%-40s %s\n", "REFERENCE", "ID");
        for (size_t i = 0; i < n; i++) {
                if (!l[i].refs || !l[i].refs[0])
                        printf("%-40s %s\n", "<none>", l[i].digest);
                STRV_FOREACH (r, l[i].refs)
                        printf("%-40s %s\n", *r, l[i].digest);
        }
        image_infos_free(l, n);
        return CLI_EXIT_OK;
}

int cmd_image(int argc, char **argv, const struct cli_ctx *ctx)
{
        const char *state = cli_state_dir(ctx);
        bool json = false;
        struct b4_error err = { 0 };
        struct image_info info;

        for (int i = 2; i < argc; i++)
                json = json || strcmp(argv[i], "--json") == 0;
        if (argc < 2)
                return CLI_USAGE;
        if (strcmp(argv[1], "import") == 0)
                return do_import(argc, argv, state, json);
        if (strcmp(argv[1], "ls") == 0 && argc == 2 + json)
                return do_ls(state, json);
        if (argc != 3 + json || argv[2][0] == '-')
                return CLI_USAGE;
        if (strcmp(argv[1], "inspect") == 0) {
                if (image_resolve(state, argv[2], &info, &err) < 0)
                        return cli_fail(&err);
                int r = print_json(info_json(&info));
                image_info_clear(&info);
                return r;
        }
        if (strcmp(argv[1], "rm") == 0) {
                if (image_remove(state, argv[2], &err) < 0)
                        return cli_fail(&err);
                if (json)
                        return print_json(jv_pack("{s:s, s:b}", "ref", argv[2], "removed", true));
                printf("removed %s\n", argv[2]);
                return CLI_EXIT_OK;
        }
        return CLI_USAGE;
}
