/* SPDX-License-Identifier: Apache-2.0 */
/* A paginated LIST (limit + continue): the objects of a collection and its resourceVersion. */

#include <errno.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strbuf.h"
#include "http/http.h"
#include "json/json.h"
#include "kube/kube-internal.h"

#define LIST_PAGE 500

/* "&key=<escaped value>" onto @sb when @value is set. */
static int add_param(struct strbuf *sb, const char *key, const char *value)
{
        cleanup_free char *e = NULL;

        if (!value)
                return 0;
        e = http_escape(value);
        return e ? strbuf_addf(sb, "&%s=%s", key, e) : -ENOMEM;
}

static int page_query(const char *ls, const char *fs, const char *cont, char **ret)
{
        struct strbuf sb;
        size_t len;
        int r;

        strbuf_init(&sb, STRBUF_UNLIMITED);
        r = strbuf_addf(&sb, "limit=%d", LIST_PAGE);
        if (r >= 0)
                r = add_param(&sb, "labelSelector", ls);
        if (r >= 0)
                r = add_param(&sb, "fieldSelector", fs);
        if (r >= 0)
                r = add_param(&sb, "continue", cont);
        if (r >= 0)
                r = strbuf_detach(&sb, ret, &len);
        strbuf_release(&sb);
        return r;
}

/* The items of one page onto @items; its metadata's continue and resourceVersion. */
static int take_page(const struct jv *page,
                     struct jv *items,
                     const char **ret_cont,
                     const char **ret_rv,
                     struct b4_error *err)
{
        const struct jv *list = jv_object_get(page, "items");
        const struct jv *meta = jv_object_get(page, "metadata");
        size_t n = jv_array_size(list);

        if (!jv_is_array(list) || !jv_is_object(meta))
                return b4_error_set(err, -EPROTO, "the API server's list has no items or metadata");
        if (jv_array_size(items) + n > KUBE_LIST_MAX_ITEMS)
                return b4_error_set(err, -E2BIG, "the list holds more than %u objects",
                                    KUBE_LIST_MAX_ITEMS);
        for (size_t i = 0; i < n; i++) {
                struct jv *o = jv_array_get(list, i);
                if (!jv_is_object(o))
                        return b4_error_set(err, -EPROTO,
                                            "the API server's list holds a non-object");
                if (jv_array_append_new(items, jv_ref(o)) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
        }
        *ret_cont = jv_string(jv_object_get(meta, "continue"));
        *ret_rv = jv_string(jv_object_get(meta, "resourceVersion"));
        if (*ret_cont && !**ret_cont)
                *ret_cont = NULL;
        return 0;
}

int kube_list_cancellable(struct kube_client *c,
                          const char *path,
                          const char *label_selector,
                          const char *field_selector,
                          int cancel_fd,
                          struct jv **ret_items,
                          char **ret_rv,
                          struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *items = jv_array_new();
        cleanup_free char *cont = NULL;
        cleanup_free char *rv = NULL;
        int r;

        if (!items)
                return b4_error_set(err, -ENOMEM, "out of memory");
        do {
                cleanup_free char *query = NULL;
                struct kube_reply reply = { 0 };
                const char *next = NULL, *page_rv = NULL;
                if (page_query(label_selector, field_selector, cont, &query) < 0)
                        return b4_error_set(err, -ENOMEM, "out of memory");
                struct kube_req req = {
                        .method = "GET", .path = path, .query = query, .cancel_fd = cancel_fd
                };
                r = kube_request(c, &req, &reply, err);
                if (r < 0)
                        return r;
                r = take_page(reply.body, items, &next, &page_rv, err);
                free(cont);
                cont = next ? b4_strdup(next) : NULL;
                if (r >= 0 && !rv && page_rv && !(rv = b4_strdup(page_rv)))
                        r = b4_error_set(err, -ENOMEM,
                                         "out of memory"); /* every page: one version */
                if (r >= 0 && next && !cont)
                        r = b4_error_set(err, -ENOMEM, "out of memory");
                kube_reply_clear(&reply);
                if (r < 0)
                        return r;
        } while (cont);
        if (ret_items)
                *ret_items = TAKE_PTR(items);
        if (ret_rv)
                *ret_rv = TAKE_PTR(rv);
        return 0;
}

int kube_list(struct kube_client *c,
              const char *path,
              const char *label_selector,
              const char *field_selector,
              struct jv **ret_items,
              char **ret_rv,
              struct b4_error *err)
{
        return kube_list_cancellable(c, path, label_selector, field_selector, -EBADF, ret_items,
                                     ret_rv, err);
}
