/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fake provider's command interpreter: exactly `true`, `false`, `exit [N]`,
 * `echo [-n] ARGS...` and `printf FORMAT [ARGS...]`. Words are split on blanks with '...'
 * (literal) and "..." (\" \\ \$ \` escapes) quoting; there is no expansion, no operator and
 * no redirection, so any of ;&|<>()$` outside quotes makes the command unsupported. An
 * unsupported command exits 127 with "fake: command not supported: <cmd>" on stderr.
 * printf understands %s, %d (printed as given), %% and the escapes \n \t \\.
 */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "fake.h"

#define CMD_OUTPUT_MAX (1024 * 1024)

static int take_quoted(const char **pp, struct strbuf *w)
{
        const char *p = *pp;
        char q = *p++;

        for (; *p && *p != q; p++) {
                if (q == '"' && *p == '\\' && strchr("\"\\$`", p[1]))
                        p++;
                if (strbuf_addc(w, *p) < 0)
                        return -ENOMEM;
        }
        if (*p != q)
                return -EINVAL; /* unbalanced quote */
        *pp = p + 1;
        return 0;
}

/* Split one word starting at *pp (not a blank) into @ret. */
static int take_word(const char **pp, char **ret)
{
        struct strbuf w;
        const char *p = *pp;
        int r = 0;

        strbuf_init(&w, CMD_OUTPUT_MAX);
        while (*p && !strchr(" \t\n", *p) && r >= 0) {
                if (*p == '\'' || *p == '"')
                        r = take_quoted(&p, &w);
                else if (strchr(";&|<>()$`\\*?[~#{}", *p))
                        r = -EINVAL;
                else
                        r = strbuf_addc(&w, *p++);
        }
        if (r >= 0)
                r = strbuf_detach(&w, ret, NULL);
        strbuf_release(&w);
        *pp = p;
        return r;
}

static int split_words(const char *cmd, char ***ret)
{
        cleanup_strv char **words = NULL;
        const char *p = cmd;
        int r;

        for (;;) {
                char *word = NULL;

                p += strspn(p, " \t\n");
                if (!*p)
                        break;
                r = take_word(&p, &word);
                if (r < 0)
                        return r;
                r = strv_consume(&words, word);
                if (r < 0)
                        return r;
        }
        if (!words)
                return -EINVAL;
        *ret = TAKE_PTR(words);
        return 0;
}

static int run_echo(char **args, struct strbuf *out)
{
        bool newline = true;
        int r = 0;

        if (args[0] && strcmp(args[0], "-n") == 0) {
                newline = false;
                args++;
        }
        for (size_t i = 0; args[i] && r >= 0; i++)
                r = strbuf_addf(out, "%s%s", i ? " " : "", args[i]);
        if (r >= 0 && newline)
                r = strbuf_addc(out, '\n');
        return r;
}

static int printf_escape(char c, struct strbuf *out)
{
        switch (c) {
        case 'n':
                return strbuf_addc(out, '\n');
        case 't':
                return strbuf_addc(out, '\t');
        case '\\':
                return strbuf_addc(out, '\\');
        default:
                return strbuf_addf(out, "\\%c", c);
        }
}

static int run_printf(char **args, struct strbuf *out)
{
        const char *f = args[0];
        size_t next = 1;
        int r = 0;

        if (!f)
                return -EINVAL;
        for (; *f && r >= 0; f++) {
                if (*f == '\\' && f[1])
                        r = printf_escape(*++f, out);
                else if (*f == '%' && f[1] == '%')
                        r = strbuf_addc(out, *++f);
                else if (*f == '%' && (f[1] == 's' || f[1] == 'd')) {
                        f++;
                        r = strbuf_adds(out, args[next] ? args[next] : "");
                        if (args[next])
                                next++;
                } else if (*f == '%')
                        return -EINVAL;
                else
                        r = strbuf_addc(out, *f);
        }
        return r;
}

/* Return: the exit code, or -EINVAL when unsupported, -ENOMEM. */
static int interpret(char **words, struct strbuf *out)
{
        const char *cmd = words[0];
        uint64_t code = 0;
        int r;

        if (strcmp(cmd, "true") == 0)
                return 0;
        if (strcmp(cmd, "false") == 0)
                return 1;
        if (strcmp(cmd, "exit") == 0) {
                if (words[1] && (words[2] || safe_atou64(words[1], &code) < 0))
                        return -EINVAL;
                return (int)(code & 0xff);
        }
        if (strcmp(cmd, "echo") == 0)
                r = run_echo(words + 1, out);
        else if (strcmp(cmd, "printf") == 0)
                r = run_printf(words + 1, out);
        else
                return -EINVAL;
        return r == -E2BIG ? -EINVAL : r;
}

int fake_exec_builtin(struct b4_sandbox *sb,
                      const struct b4_exec_req *req,
                      struct b4_exec_result *ret,
                      void *userdata,
                      struct b4_error *err)
{
        cleanup_strv char **words = NULL;
        struct strbuf out, errout;
        int r;

        strbuf_init(&out, CMD_OUTPUT_MAX);
        strbuf_init(&errout, CMD_OUTPUT_MAX);
        r = split_words(req->command, &words);
        if (r >= 0)
                r = interpret(words, &out);
        if (r == -EINVAL) {
                strbuf_reset(&out);
                r = strbuf_addf(&errout, "fake: command not supported: %s\n", req->command);
                r = r < 0 ? r : 127;
        }
        if (r >= 0) {
                ret->exit_code = r;
                r = strbuf_detach(&out, &ret->out, &ret->out_len);
        }
        if (r >= 0)
                r = strbuf_detach(&errout, &ret->errout, &ret->errout_len);
        strbuf_release(&out);
        strbuf_release(&errout);
        if (r < 0) {
                b4_exec_result_clear(ret);
                return b4_error_set(err, r, "fake exec failed");
        }
        return 0;
}

int fake_exec_noop(struct b4_sandbox *sb,
                   const struct b4_exec_req *req,
                   struct b4_exec_result *ret,
                   void *userdata,
                   struct b4_error *err)
{
        struct strbuf empty;
        int r;

        strbuf_init(&empty, 0);
        r = strbuf_detach(&empty, &ret->out, &ret->out_len);
        if (r >= 0)
                r = strbuf_detach(&empty, &ret->errout, &ret->errout_len);
        strbuf_release(&empty);
        if (r < 0) {
                b4_exec_result_clear(ret);
                return b4_error_set(err, r, "fake exec failed");
        }
        ret->exit_code = 0;
        return 0;
}
