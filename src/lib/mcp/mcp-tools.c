/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools MCP clients see: docs/tools.md's five with the same names and argument schemas
 * (plus thread_id unless the server is bound to one thread) and, when opted in, the
 * lifecycle tools. One table: name, description, schemas, annotations.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "json/json.h"
#include "mcp-internal.h"

struct mcp_tool {
        const char *name;
        const char *title;
        const char *description;
        const char *input;  /* the inputSchema's properties and required list, as JSON */
        const char *output; /* the outputSchema, as JSON; NULL = none */
        bool read_only, destructive, idempotent;
        bool open_world_if_network; /* openWorldHint = the thread's network is allowed */
        bool lifecycle;
        bool no_thread; /* works on no one thread (listThreads) */
};

#define INT_GE1     "{\"type\":\"integer\",\"minimum\":1}"
#define INT_OR_NULL "{\"type\":[\"integer\",\"null\"],\"minimum\":1}"

static const struct mcp_tool tools[] = {
        { .name = "readFile",
          .title = "Read a file",
          .description = "Read a text file of the thread's workspace (/workspace), whole or a "
                         "range of lines (startLine, endLine: 1-based, inclusive).",
          .input = "{\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1},"
                   "\"startLine\":" INT_OR_NULL ",\"endLine\":" INT_OR_NULL
                   "},\"required\":[\"path\"]}",
          .read_only = true,
          .idempotent = true },
        { .name = "writeFile",
          .title = "Write a file",
          .description = "Replace a file of the thread's workspace with content (parents are "
                         "created; the replacement is atomic).",
          .input = "{\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1},"
                   "\"content\":{\"type\":\"string\"}},\"required\":[\"path\",\"content\"]}",
          .destructive = true,
          .idempotent = true },
        { .name = "editFile",
          .title = "Edit a file",
          .description = "Replace oldText with newText in a UTF-8 file of the thread's "
                         "workspace: oldText must occur exactly once unless replaceAll is true.",
          .input = "{\"properties\":{\"path\":{\"type\":\"string\",\"minLength\":1},"
                   "\"oldText\":{\"type\":\"string\",\"minLength\":1},"
                   "\"newText\":{\"type\":\"string\"},"
                   "\"replaceAll\":{\"type\":[\"boolean\",\"null\"]}},"
                   "\"required\":[\"path\",\"oldText\",\"newText\"]}",
          .destructive = true },
        { .name = "listDir",
          .title = "List a directory",
          .description = "The entry names of a directory of the thread's workspace, sorted "
                         "bytewise (path defaults to the workspace root).",
          .input = "{\"properties\":{\"path\":{\"type\":\"string\",\"default\":\".\"}},"
                   "\"required\":[]}",
          .read_only = true,
          .idempotent = true },
        { .name = "runBash",
          .title = "Run a shell command",
          .description = "Run a bash command line in the thread's sandbox, in the workspace "
                         "(or cwd). A non-zero exit code is a result, not an error. The "
                         "sandbox and its files stay between calls.",
          .input = "{\"properties\":{\"command\":{\"type\":\"string\",\"minLength\":1},"
                   "\"cwd\":{\"type\":\"string\",\"minLength\":1},"
                   "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
                   "\"timeoutMs\":" INT_GE1 ",\"maxOutputBytes\":" INT_GE1
                   "},\"required\":[\"command\"]}",
          .output = "{\"type\":\"object\",\"properties\":{"
                    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
                    "\"exitCode\":{\"type\":\"integer\"},\"timedOut\":{\"type\":\"boolean\"},"
                    "\"cancelled\":{\"type\":\"boolean\"},\"truncated\":{\"type\":\"boolean\"},"
                    "\"durationMs\":{\"type\":\"integer\"},\"wallMs\":{\"type\":\"integer\"},"
                    "\"cpuMs\":{\"type\":[\"integer\",\"null\"]},"
                    "\"peakMemoryBytes\":{\"type\":[\"integer\",\"null\"]},"
                    "\"maxProcesses\":{\"type\":[\"integer\",\"null\"]},"
                    "\"oomKilled\":{\"type\":[\"boolean\",\"null\"]}},"
                    "\"required\":[\"stdout\",\"stderr\",\"exitCode\",\"timedOut\","
                    "\"cancelled\",\"truncated\",\"durationMs\"]}",
          .destructive = true,
          .open_world_if_network = true },
        { .name = "createThread",
          .title = "Create a thread",
          .description = "Create a thread: its own sandbox and workspace, kept across turns. "
                         "Its sandbox is released after the configured idleTimeoutMs without "
                         "calls; its workspace is kept until deleteThread.",
          .input = "{\"properties\":{},\"required\":[]}",
          .lifecycle = true },
        { .name = "listThreads",
          .title = "List threads",
          .description = "The threads this caller may use, with their state.",
          .input = "{\"properties\":{},\"required\":[]}",
          .read_only = true,
          .idempotent = true,
          .lifecycle = true,
          .no_thread = true },
        { .name = "releaseThread",
          .title = "Release a thread",
          .description = "Drop the thread's warm sandbox and keep its workspace (the next call "
                         "reattaches it).",
          .input = "{\"properties\":{},\"required\":[]}",
          .idempotent = true,
          .lifecycle = true },
        { .name = "deleteThread",
          .title = "Delete a thread",
          .description = "Destroy the thread's sandbox and workspace and forget it.",
          .input = "{\"properties\":{},\"required\":[]}",
          .destructive = true,
          .idempotent = true,
          .lifecycle = true },
};

const struct mcp_tool *mcp_tool_find(const struct mcp_server *s, const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (strcmp(tools[i].name, name) == 0 &&
                    (!tools[i].lifecycle || mcp_server_lifecycle(s)))
                        return &tools[i];
        return NULL;
}

bool mcp_tool_structured(const struct mcp_tool *t)
{
        return t->output != NULL;
}

const char *mcp_tool_name(const struct mcp_tool *t)
{
        return t->name;
}

bool mcp_tool_needs_thread(const struct mcp_tool *t)
{
        return !t->no_thread;
}

static struct jv *parse_const(const char *text)
{
        struct jv *v = NULL;

        return jv_parse(text, strlen(text), &v, NULL) < 0 ? NULL : v;
}

/* {type:object, properties, required, additionalProperties:false} with thread_id added when
 * the tool needs one and the server is not bound. */
static struct jv *input_schema(const struct mcp_server *s, const struct mcp_tool *t)
{
        cleanup_(jv_unrefp) struct jv *in = parse_const(t->input);
        struct jv *props = jv_object_get(in, "properties");
        struct jv *req = jv_object_get(in, "required");

        if (!props || !req)
                return NULL;
        if (t->lifecycle || (!mcp_server_thread(s) && !t->no_thread)) {
                if (jv_object_set_new(props, "thread_id",
                                      jv_pack("{s:s, s:i, s:s}", "type", "string", "minLength", 1,
                                              "description",
                                              "the thread (its sandbox and workspace)")) < 0 ||
                    (!t->no_thread && jv_array_append_new(req, jv_string_new("thread_id")) < 0))
                        return NULL;
        }
        return jv_pack("{s:s, s:O, s:O, s:b}", "type", "object", "properties", props, "required",
                       req, "additionalProperties", false);
}

static struct jv *tool_json(const struct mcp_server *s, const struct mcp_tool *t, bool network)
{
        struct jv *out = t->output ? parse_const(t->output) : NULL;

        if (t->output && !out)
                return NULL;
        return jv_pack("{s:s, s:s, s:s, s:o, s:o*, s:{s:s, s:b, s:b, s:b, s:b}}", "name", t->name,
                       "title", t->title, "description", t->description, "inputSchema",
                       input_schema(s, t), "outputSchema", out, "annotations", "title", t->title,
                       "readOnlyHint", t->read_only, "destructiveHint", t->destructive,
                       "idempotentHint", t->idempotent, "openWorldHint",
                       t->open_world_if_network && network);
}

struct jv *mcp_tools_list(const struct mcp_server *s, bool network)
{
        struct jv *a = jv_array_new();

        for (size_t i = 0; a && i < ELEMENTSOF(tools); i++) {
                if (tools[i].lifecycle && !mcp_server_lifecycle(s))
                        continue;
                if (jv_array_append_new(a, tool_json(s, &tools[i], network)) < 0)
                        a = jv_unref(a);
        }
        return a;
}

bool mcp_is_lifecycle_tool(const char *tool)
{
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (tools[i].lifecycle && strcmp(tools[i].name, tool) == 0)
                        return true;
        return false;
}
