/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which binary runs a command (handover.h). Built into both: b4box-full (B4_CLI_FULL=1)
 * runs everything itself; the light b4box execs b4box-full, from the build tree when it
 * runs from the build tree, else from the install path.
 */

#include "handover.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "b4box/b4.h"

#include "base/alloc.h"
#include "base/strv.h"

#ifndef B4_CLI_FULL
# define B4_CLI_FULL 1
#endif
#ifndef B4_CLI_BUILD_PATH
# define B4_CLI_BUILD_PATH ""
#endif
#ifndef B4_CLI_FULL_BUILD_PATH
# define B4_CLI_FULL_BUILD_PATH ""
#endif
#ifndef B4_CLI_FULL_INSTALL_PATH
# define B4_CLI_FULL_INSTALL_PATH "/usr/local/libexec/b4box-full"
#endif

static char **kept_argv; /* NULL-terminated; the strings are main()'s */

void cli_handover_init(int argc, char **argv)
{
        kept_argv = b4_calloc((size_t)argc + 1, sizeof(*kept_argv));
        if (kept_argv)
                memcpy(kept_argv, argv, (size_t)argc * sizeof(*kept_argv));
}

/* The configured provider's type is built into this binary (or the config is refused:
 * the command itself then says why). */
static bool provider_here(const struct cli_ctx *ctx)
{
        struct b4_config *cfg = NULL;
        char **quiet = NULL;
        bool here = true;

        if (cli_load_config_collect(ctx, &cfg, NULL, &quiet) == 0) {
                here = b4_provider_available(cfg->sandbox.provider.type);
                b4_config_free(cfg);
        }
        strv_free(quiet);
        return here;
}

bool cli_runs_here(const struct cli_command *c, const struct cli_ctx *ctx)
{
        return B4_CLI_FULL || !c->uses_provider || provider_here(ctx);
}

/* The build tree's b4box-full when this b4box is the build tree's, else the installed one. */
static const char *full_path(void)
{
        struct stat self, built;

        if (B4_CLI_BUILD_PATH[0] && stat("/proc/self/exe", &self) == 0 &&
            stat(B4_CLI_BUILD_PATH, &built) == 0 && self.st_dev == built.st_dev &&
            self.st_ino == built.st_ino)
                return B4_CLI_FULL_BUILD_PATH;
        return B4_CLI_FULL_INSTALL_PATH;
}

int cli_handover(void)
{
        const char *path = full_path();

        if (B4_CLI_FULL)
                return cli_error("no b4box-full to hand this command to"), CLI_EXIT_FAILED;
        if (!kept_argv)
                return cli_error("out of memory"), CLI_EXIT_FAILED;
        execv(path, kept_argv);
        cli_error("cannot run %s (it runs serve, --server and the Docker provider): %s", path,
                  strerror(errno));
        return CLI_EXIT_FAILED;
}
