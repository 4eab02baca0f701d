/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rootless-api STATE_DIR: the provider API in rootless mode (TAP), run by rootless.sh as an
 * unprivileged user: acquire (network deny), exec, host-side file operations, a workspace
 * reader, release and destroy. It refuses to run as root (that would not be rootless).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/b4.h"

static int n, failed;

static void check(const char *what, int ok)
{
        printf("%sok %d - %s\n", ok ? "" : "not ", ++n, what);
        failed += !ok;
}

static int exec_out(struct b4_sandbox *sb, const char *cmd, char *out, size_t size)
{
        struct b4_exec_req req = { .command = cmd };
        struct b4_exec_result res = { 0 };
        struct b4_error err = { 0 };
        int r = b4_sandbox_exec(sb, &req, &res, &err);

        if (r < 0) {
                printf("# exec '%s': %s\n", cmd, err.msg);
                return r;
        }
        snprintf(out, size, "%s", res.out ? res.out : "");
        r = res.exit_code;
        b4_exec_result_clear(&res);
        return r;
}

static void with_sandbox(struct b4_provider *p, const char *state)
{
        struct b4_policy pol;
        struct b4_acquire_req req = { .thread_id = "api", .policy = &pol };
        struct b4_sandbox *sb = NULL;
        struct b4_reader *rd = NULL;
        struct b4_reader_req rreq = { .thread_id = "api" };
        struct b4_error err = { 0 };
        char out[256], *data = NULL, path[4096];
        size_t len = 0;
        struct stat st;

        b4_policy_init(&pol);
        pol.network = B4_NETWORK_DENY;
        check("acquire (network deny)", b4_provider_acquire(p, &req, &sb, &err) >= 0);
        if (!sb) {
                printf("# %s\n", err.msg);
                return;
        }
        check("write_file host-side",
              b4_fs_write_file(b4_sandbox_fs(sb), "/workspace/d/a.txt", "api", 3, &err) >= 0);
        check("inside: owned by 1000 and readable",
              exec_out(sb, "stat -c %u:%g /workspace/d/a.txt; cat /workspace/d/a.txt", out,
                       sizeof(out)) == 0 &&
                      strcmp(out, "1000:1000\napi") == 0);
        char id[41];
        if (b4_resource_id("rootless-api", "api", id) < 0)
                id[0] = '\0';
        snprintf(path, sizeof(path), "%s/native/workspaces/%s/d/a.txt", state, id);
        check("outside: owned by the invoking user",
              stat(path, &st) == 0 && st.st_uid == getuid() && st.st_gid == getgid());
        check("write into the read-only root is EROFS",
              b4_fs_write_file(b4_sandbox_fs(sb), "/usr/x", "x", 1, &err) < 0);
        check("reader opens", b4_provider_open_reader(p, &rreq, &rd, &err) >= 0);
        if (rd)
                check("reader reads what the thread wrote",
                      b4_fs_read_file(b4_reader_fs(rd), "/workspace/d/a.txt", 100, &data, &len,
                                      &err) >= 0 &&
                              len == 3 && memcmp(data, "api", 3) == 0);
        else
                check("reader reads what the thread wrote", 0);
        free(data);
        b4_reader_free(rd);
        b4_sandbox_unref(sb);
        b4_policy_clear(&pol);
}

int main(int argc, char **argv)
{
        struct b4_provider_config cfg = { .type = (char *)"native",
                                          .scope = (char *)"rootless-api" };
        struct b4_provider *p = NULL;
        struct b4_error err = { 0 };

        if (argc != 2 || geteuid() == 0) {
                printf("1..0 # SKIP run as an unprivileged user with a state dir\n");
                return 0;
        }
        cfg.state_dir = argv[1];
        printf("1..9\n");
        if (b4_provider_new(&cfg, &p, &err) < 0) {
                printf("# provider: %s\n", err.msg);
                return 1;
        }
        with_sandbox(p, argv[1]);
        check("release", b4_provider_release(p, "api", &err) >= 0);
        check("destroy", b4_provider_destroy(p, "api", &err) >= 0);
        b4_provider_free(p);
        return failed ? 1 : 0;
}
