/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The light b4box's side of what only b4box-full has (handover.h): the server, the commands
 * that only talk to one, and the HTTP client (client.h). Each hands the whole command over.
 * A command asks the client (cli_server_url(), or a request) before it does anything else
 * for a server, so a command that goes to one runs in b4box-full from its start.
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

int cmd_image(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover(); /* the import needs libarchive */
}

int cmd_kube(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover(); /* the Kubernetes client is b4box-full's */
}

int cmd_ps(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover();
}

int cmd_logs(int argc, char **argv, const struct cli_ctx *ctx)
{
        return cli_handover();
}

int cmd_kill(int argc, char **argv, const struct cli_ctx *ctx)
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

/* The rest of client.h: in b4box, every way to a server hands the command over. */
int cli_http(const struct cli_client *c,
             const char *method,
             const char *path,
             const char *body,
             long *ret_status,
             char **ret_body,
             struct b4_error *err)
{
        exit(cli_handover());
}

int cli_http_request(const struct cli_client *c,
                     const struct cli_http_req *req,
                     struct cli_http_resp *ret,
                     struct b4_error *err)
{
        exit(cli_handover());
}

int cli_http_fail(long status, const char *body)
{
        exit(cli_handover());
}

int cli_remote_tool(const char *url,
                    const char *thread,
                    const char *tool,
                    const char *args_json,
                    char **ret_json)
{
        exit(cli_handover());
}

int cli_remote_tool_stream(const char *url,
                           const char *thread,
                           const char *tool,
                           const char *args_json,
                           int cancel_fd,
                           cli_event_fn *fn,
                           void *userdata)
{
        exit(cli_handover());
}
