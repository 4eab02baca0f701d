/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The light b4box's side of what only b4box-full has (handover.h): the server, the commands
 * that only talk to one, and the HTTP client. Each hands the whole command over; the client
 * is first asked by cli_server_url(), before a command does anything, so a command that
 * goes to a server runs in b4box-full from its start.
 */

#include <stdlib.h>

#include "b4box/b4.h"

#include "cli.h"
#include "client.h"
#include "handover.h"

int cmd_serve(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover();
}

int cmd_threads(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover();
}

int cmd_upload(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover();
}

const char *cli_server_url(const char *flag)
{
        const char *env = secure_getenv("B4BOX_URL");

        if (flag || (env && *env))
                exit(cli_handover());
        return NULL;
}

/* Reached only with a server URL, which cli_server_url() has already handed over. */
int cli_remote_tool(const char *url,
                    const char *thread,
                    const char *tool,
                    const char *args_json,
                    char **ret_json)
{
        exit(cli_handover());
}
