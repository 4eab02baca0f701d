/* SPDX-License-Identifier: Apache-2.0 */
/* Skeleton: the API of kube.h, implemented in the following commits. */

#include "kube/kube.h"

#include <errno.h>
#include <stdlib.h>

int kube_client_new(const struct kube_config *cfg, struct kube_client **ret, struct b4_error *err)
{
        (void)cfg;
        (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
struct kube_client *kube_client_free(struct kube_client *c)
{
        (void)c;
        return NULL;
}
const struct kube_config *kube_client_config(const struct kube_client *c)
{
        (void)c;
        return NULL;
}
const char *kube_client_namespace(const struct kube_client *c)
{
        (void)c;
        return NULL;
}
int kube_client_token(struct kube_client *c, char **ret, struct b4_error *err)
{
        (void)c;
        *ret = NULL;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
void kube_client_token_invalidate(struct kube_client *c)
{
        (void)c;
}
char *kube_path(const char *gv, const char *ns, const char *resource, const char *name,
                const char *sub)
{
        (void)gv, (void)ns, (void)resource, (void)name, (void)sub;
        return NULL;
}
void kube_reply_clear(struct kube_reply *r)
{
        (void)r;
}
int kube_request(struct kube_client *c, const struct kube_req *req, struct kube_reply *ret,
                 struct b4_error *err)
{
        (void)c, (void)req, (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
int kube_get(struct kube_client *c, const char *path, struct jv **ret, struct b4_error *err)
{
        (void)c, (void)path, (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
int kube_create(struct kube_client *c, const char *path, const struct jv *obj, struct jv **ret,
                struct b4_error *err)
{
        (void)c, (void)path, (void)obj, (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
int kube_replace(struct kube_client *c, const char *path, const struct jv *obj, struct jv **ret,
                 struct b4_error *err)
{
        (void)c, (void)path, (void)obj, (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
int kube_patch(struct kube_client *c, const char *path, const struct jv *patch, struct jv **ret,
               struct b4_error *err)
{
        (void)c, (void)path, (void)patch, (void)ret;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
int kube_delete(struct kube_client *c, const char *path, const char *query, struct b4_error *err)
{
        (void)c, (void)path, (void)query;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
int kube_status_decode(long status, const char *body, size_t len, struct b4_error *err)
{
        (void)status, (void)body, (void)len;
        return b4_error_set(err, -EIO, "not yet");
}
int kube_list(struct kube_client *c, const char *path, const char *ls, const char *fs,
              struct jv **ret_items, char **ret_rv, struct b4_error *err)
{
        (void)c, (void)path, (void)ls, (void)fs, (void)ret_items, (void)ret_rv;
        return b4_error_set(err, -EOPNOTSUPP, "not yet");
}
