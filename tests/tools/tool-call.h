/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The tools' typed API from JSON text, as the edges use it: the arguments parsed once, the
 * result document serialised once, and the typed fields checked against that document (ok
 * and code must say what the document says).
 */

#include "b4box/tools.h"

struct jv;

/* jv_dump of @res's document after checking ok/code against it (fails the test otherwise). */
char *tool_result_text(const struct b4_tool_result *res);
/* b4_tools_call() with @args_json parsed (must be valid JSON); *ret_json the document. */
int tool_call_text(struct b4_tools *t,
                   const char *tool,
                   const char *args_json,
                   char **ret_json,
                   struct b4_error *err);
/* b4_tools_resume(); *ret_json the document. */
int tool_resume_text(struct b4_tools *t,
                     const char *id,
                     const char *answer,
                     char **ret_json,
                     struct b4_error *err);
