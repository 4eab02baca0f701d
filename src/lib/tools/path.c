/* SPDX-License-Identifier: Apache-2.0 */
/* Path arithmetic of the jail (reference §10.2): lexical resolve and containment. */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "tools/tools-internal.h"

/* Append the segments of @p to @out, which holds an absolute normalised path. */
static int push_segments(struct strbuf *out, const char *p)
{
        while (*p) {
                size_t n = strcspn(p, "/");
                int r = 0;

                if (n == 0 || (n == 1 && p[0] == '.')) {
                        /* empty or "." */
                } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                        char *slash = memrchr(out->buf, '/', out->len);
                        out->len = slash ? (size_t)(slash - out->buf) : 0;
                        out->buf[out->len] = '\0';
                } else {
                        r = strbuf_addc(out, '/');
                        if (r >= 0)
                                r = strbuf_add(out, p, n);
                }
                if (r < 0)
                        return r;
                p += n;
                if (*p == '/')
                        p++;
        }
        return 0;
}

int jail_resolve(const char *root, const char *path, char **ret)
{
        struct strbuf out;
        int r;

        assert(root);
        assert(path);
        assert(ret);
        if (root[0] != '/')
                return -EINVAL;
        strbuf_init(&out, STRBUF_UNLIMITED);
        r = strbuf_adds(&out, "");
        if (r >= 0 && path[0] != '/')
                r = push_segments(&out, root);
        if (r >= 0)
                r = push_segments(&out, path);
        if (r >= 0 && out.len == 0)
                r = strbuf_addc(&out, '/');
        if (r >= 0)
                r = strbuf_detach(&out, ret, NULL);
        strbuf_release(&out);
        return r;
}

bool jail_is_inside(const char *root, const char *path)
{
        size_t n = strlen(root);

        if (strcmp(root, "/") == 0)
                return path[0] == '/';
        return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool jail_is_tool_output(const char *root, const char *abs)
{
        static const char dir[] = "tool-outputs";
        size_t n = strlen(root);
        const char *rel;

        if (!jail_is_inside(root, abs))
                return false;
        rel = abs + n;
        if (strcmp(root, "/") != 0) {
                if (*rel == '\0')
                        return false;
                rel++;
        } else {
                rel = abs + 1;
        }
        return strncmp(rel, dir, sizeof(dir) - 1) == 0 &&
               (rel[sizeof(dir) - 1] == '\0' || rel[sizeof(dir) - 1] == '/');
}
