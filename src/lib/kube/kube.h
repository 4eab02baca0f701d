/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The Kubernetes API client of the kubernetes provider (docs/kubernetes.md):
 *   - configuration (config.c): where the API server is and how to authenticate, resolved
 *     from plain options, a kubeconfig (libyaml) or the in-cluster service account;
 *   - REST (rest.c): JSON requests over src/lib/http, Status bodies decoded to errnos and
 *     messages, a client-side token bucket, Retry-After, the token re-read on rotation;
 *   - watches (watch.c): a watch's NDJSON events parsed as hostile input, with caps;
 *   - a shared informer (informer.c): LIST + WATCH kept in memory for waiters.
 * docs/kube-client.md has the choices made (precedence, retries, the errno table).
 *
 * The API server and everything behind it is untrusted: every reply is parsed with caps,
 * and its text reaches messages only sanitised (control characters replaced) and truncated.
 *
 * Thread-safe: a struct kube_client may be shared by any number of threads once made (the
 * token source and the token bucket have their own locks; each request has its own
 * transfer). A struct kube_config is plain data owned by whoever made it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

struct jv;
struct kube_client;

/* Where the in-cluster service account's files are (token, ca.crt, namespace). */
#define KUBE_SA_DIR        "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_DEFAULT_QPS   50.0
#define KUBE_DEFAULT_BURST 100u

/*
 * What the provider's configuration says; every field may be NULL (0) = not set.
 * Borrowed for the call of kube_config_resolve().
 *
 * Precedence: explicit fields > kubeconfig (+ context) > in-cluster.
 *   1. The base: the kubeconfig @kubeconfig (a path, or a ':'-separated list merged the way
 *      kubectl merges it: the first file to set a name wins); else $KUBECONFIG when set and
 *      non-empty; else the in-cluster service account when $KUBERNETES_SERVICE_HOST is set
 *      or @api_server is given; else ~/.kube/config when it exists. A @context without a
 *      kubeconfig selects from $KUBECONFIG or ~/.kube/config. None of these: -ENOENT.
 *   2. Then @api_server, @token_file, @ca_file and @namespace replace what the base said.
 * In-cluster, the server is https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
 * (IPv6 bracketed) unless @api_server is given; the token and CA files are @sa_dir's, each
 * used only when it exists (a missing token file then means no token); the namespace is
 * @namespace, else the service account's namespace file, else "default".
 */
struct kube_options {
        const char *api_server; /* "https://host[:port]" (or http:// for a local proxy) */
        const char *namespace;  /* the default namespace of requests the caller builds */
        const char *token_file; /* a bearer token, re-read when it changes (rotation) */
        const char *ca_file;    /* PEM bundle the server's certificate must chain to */
        const char *kubeconfig; /* path or ':'-list; relative paths against the cwd */
        const char *context;    /* a kubeconfig context by name; NULL = current-context */
        const char *sa_dir;     /* in-cluster files; NULL = KUBE_SA_DIR (tests point it away) */
        /* kubeconfig's insecure-skip-tls-verify: false = refused (-EPERM, named); true =
         * accepted, and kube_config.insecure says so (the caller reports it) */
        bool allow_insecure;
        double qps;     /* token bucket rate; 0 = KUBE_DEFAULT_QPS, < 0 = unlimited */
        unsigned burst; /* token bucket depth; 0 = KUBE_DEFAULT_BURST */
};

/*
 * A resolved configuration: plain data, every pointer owned (kube_config_release()).
 * A PEM field is either a file (*_file) or the bytes (*_pem, from a kubeconfig's *-data,
 * base64-decoded), never both.
 */
struct kube_config {
        char *server;     /* base URL, no trailing '/' */
        char *namespace;  /* never NULL once resolved */
        char *token;      /* a static bearer token (kubeconfig users[].user.token), or NULL */
        char *token_file; /* a token file, re-read on rotation and on a 401, or NULL */
        char *ca_file;
        void *ca_pem;
        size_t ca_pem_len;
        char *cert_file; /* client certificate (PEM) */
        void *cert_pem;
        size_t cert_pem_len;
        char *key_file; /* its private key (PEM) */
        void *key_pem;
        size_t key_pem_len;
        char *tls_server_name; /* kubeconfig's tls-server-name, or NULL */
        bool insecure;         /* certificate checks off (only with allow_insecure) */
        char *source;          /* for messages: "in-cluster", "kubeconfig '<path>' context
                                * '<name>'", "options" */
        double qps;            /* the token bucket: 0 = KUBE_DEFAULT_QPS, < 0 = unlimited */
        unsigned burst;        /* 0 = KUBE_DEFAULT_BURST */
};

/**
 * kube_config_resolve() - resolve @opts (precedence above) into @ret
 * @ret: written only on success; the caller kube_config_release()s it
 * Return: 0; -ENOENT (no configuration found, a named file missing, a context, cluster or
 * user the kubeconfig names but does not define); -EINVAL (bad YAML, a field of the wrong
 * type, bad base64 in a *-data field, a server that is not an http(s) URL, both a token and
 * a client certificate missing is fine but half a client pair is not); -EPERM
 * (insecure-skip-tls-verify without allow_insecure); -EOPNOTSUPP (an exec plugin or
 * auth-provider user, basic auth); -EFBIG (a file over 1 MiB); -ENOMEM. The message names
 * the file and the entry.
 */
int kube_config_resolve(const struct kube_options *opts,
                        struct kube_config *ret,
                        struct b4_error *err);
/** kube_config_release() - free what @cfg owns (secrets erased) and zero it. NULL ok. */
void kube_config_release(struct kube_config *cfg);

/* Idle connections a client keeps open for its next requests (http_client_set_reuse()). */
#define KUBE_IDLE_CONNECTIONS 8u

/**
 * kube_client_new() - a client for the server @cfg names; its requests, from any number of
 * threads, reuse up to KUBE_IDLE_CONNECTIONS kept connections and resume TLS sessions
 * @cfg: copied
 * Return: 0; -EINVAL (a server URL the HTTP client refuses); -ENOENT (the token file does
 * not exist); -EIO (libcurl); -ENOMEM.
 */
int kube_client_new(const struct kube_config *cfg, struct kube_client **ret, struct b4_error *err);
/** kube_client_free() - NULL ok. Return: NULL. */
struct kube_client *kube_client_free(struct kube_client *c);

static inline void kube_client_freep(struct kube_client **c)
{
        if (*c)
                *c = kube_client_free(*c);
}

/** kube_client_config() - the client's configuration (for exec's own connection);
 * borrowed, valid as long as @c. Its token is the one at creation: use kube_client_token(). */
const struct kube_config *kube_client_config(const struct kube_client *c);
/** kube_client_namespace() - the default namespace; borrowed, valid as long as @c. */
const char *kube_client_namespace(const struct kube_client *c);
/** kube_client_connections() - connections the client's requests opened so far (exec's are
 * not counted): how tests and benches see reuse. */
uint64_t kube_client_connections(struct kube_client *c);

/**
 * kube_client_token() - the bearer token to send now (the token file re-read when its
 * inode, size or mtime changed, or once a minute)
 * @ret: heap copy (erase it with explicit_bzero before free), NULL when there is none
 * Return: 0, -ENOENT/-EACCES/-EIO (the token file cannot be read; message names it),
 * -EINVAL (an empty token or one with control characters), -ENOMEM.
 */
int kube_client_token(struct kube_client *c, char **ret, struct b4_error *err);
/** kube_client_token_invalidate() - forget the cached token (a 401 seen by exec, say): the
 * next kube_client_token() re-reads the file. */
void kube_client_token_invalidate(struct kube_client *c);

/**
 * kube_path() - "/api/v1/namespaces/NS/RESOURCE[/NAME][/SUB]" or, with a group,
 * "/apis/GROUP/VERSION/namespaces/NS/RESOURCE[/NAME][/SUB]"
 * @group_version: "v1" (core) or "networking.k8s.io/v1", ...
 * @ns:            NULL = cluster-scoped (no namespaces/NS)
 * @name, @sub:    NULL = none; @ns and @name are percent-encoded
 * Return: heap, NULL on OOM.
 */
char *kube_path(const char *group_version,
                const char *ns,
                const char *resource,
                const char *name,
                const char *sub);

/* One request. Every pointer is borrowed for the call. */
struct kube_req {
        const char *method;       /* "GET", "POST", "PUT", "PATCH", "DELETE" */
        const char *path;         /* from kube_path(), already encoded */
        const char *query;        /* "a=b&c=d" already encoded, or NULL */
        const struct jv *body;    /* sent as JSON, or NULL */
        const char *content_type; /* NULL = application/json (PATCH: merge-patch+json) */
        uint64_t timeout_ms;      /* the whole exchange, retries included; 0 = 30 s */
        int cancel_fd;            /* readable = give up (-ECANCELED); -EBADF = none */
        size_t max_body;          /* response cap; 0 = KUBE_MAX_BODY */
};

#define KUBE_MAX_BODY (16u * 1024 * 1024)

/* A decoded answer: any 2xx status. */
struct kube_reply {
        long status;     /* 200, 201, 202 */
        struct jv *body; /* owned (jv_unref); NULL when the body was empty */
};

void kube_reply_clear(struct kube_reply *r);

/**
 * kube_request() - one API request, waited for
 * Waits for the token bucket first (every attempt). A 401 re-reads the token file once and
 * retries; a 429 or 503 with Retry-After (seconds) is retried after that wait, each wait at
 * most KUBE_RETRY_AFTER_MAX_MS, at most KUBE_RETRIES_MAX times, never past the timeout.
 * A lost connection (docs/kube-client.md "Connections"): a GET or DELETE whose exchange
 * failed -EIO or -ECONNRESET is sent once more; a POST, PUT or PATCH is not when its body
 * may have reached the server (-ECONNRESET: it may have been applied).
 * @ret: a 2xx reply (kube_reply_clear()); written only on success
 * Return: 0; a non-2xx answer as kube_status_decode() maps it (its message in @err);
 * -EPROTO (a 2xx body that is not JSON); -ETIMEDOUT; -ECANCELED; -ECONNREFUSED,
 * -EHOSTUNREACH, -ECONNRESET, -EIO (transport, TLS); -EFBIG (over max_body); -ENOMEM.
 */
int kube_request(struct kube_client *c,
                 const struct kube_req *req,
                 struct kube_reply *ret,
                 struct b4_error *err);

#define KUBE_RETRY_AFTER_MAX_MS 10000u
#define KUBE_RETRIES_MAX        5u

/*
 * Shorthands over kube_request() with the default timeout and no cancel fd.
 * @ret may be NULL (the body is dropped); otherwise it gets the returned object (owned).
 */
int kube_get(struct kube_client *c, const char *path, struct jv **ret, struct b4_error *err);
/* POST @obj to the collection @path: 201 (or 200/202). -EEXIST when it exists. */
int kube_create(struct kube_client *c,
                const char *path,
                const struct jv *obj,
                struct jv **ret,
                struct b4_error *err);
/* PUT @obj (carrying metadata.resourceVersion for optimistic locking: -EAGAIN if stale). */
int kube_replace(struct kube_client *c,
                 const char *path,
                 const struct jv *obj,
                 struct jv **ret,
                 struct b4_error *err);
/* PATCH with a JSON merge patch (application/merge-patch+json). */
int kube_patch(struct kube_client *c,
               const char *path,
               const struct jv *patch,
               struct jv **ret,
               struct b4_error *err);
/* DELETE; @query e.g. "gracePeriodSeconds=0" or NULL. -ENOENT when already gone. */
int kube_delete(struct kube_client *c, const char *path, const char *query, struct b4_error *err);
/* DELETE @listed (an object as listed or cached) only if it is still that object: its uid
 * and resourceVersion as DeleteOptions preconditions. -EAGAIN (409) when it changed since,
 * -ENOENT when gone. */
int kube_delete_listed(struct kube_client *c,
                       const char *path,
                       const char *query,
                       const struct jv *listed,
                       struct b4_error *err);

/**
 * kube_status_decode() - the errno of a non-2xx answer, from its HTTP @status and the
 * Status object in @body (untrusted; any bytes, @len of them):
 *   404 -ENOENT; 409 AlreadyExists -EEXIST, other 409 (Conflict) -EAGAIN; 400, 422 -EINVAL;
 *   401 -EPERM; 403 -EACCES; 405 -EOPNOTSUPP; 410 -ESTALE; 413 -EFBIG; 429 -EBUSY;
 *   504 and reason Timeout -ETIMEDOUT; anything else -EIO.
 * The message (set when @err is non-NULL) is "<Status.message> (<code> <reason>)", or the
 * HTTP status alone when the body is not a Status; sanitised and capped.
 * Return: the negative errno (never 0).
 */
int kube_status_decode(long status, const char *body, size_t len, struct b4_error *err);

/* Watch events (watch.c). */
enum kube_event_type {
        KUBE_EVENT_ADDED,
        KUBE_EVENT_MODIFIED,
        KUBE_EVENT_DELETED,
        KUBE_EVENT_BOOKMARK,
};

/*
 * One event; @object is borrowed for the call (jv_ref() it to keep it). A BOOKMARK's object
 * carries only metadata.resourceVersion. Return: >= 0 to go on, < 0 to stop the watch with
 * that error.
 */
typedef int (*kube_event_fn)(enum kube_event_type type, struct jv *object, void *userdata);

/* What to watch. Every pointer is borrowed for the call. */
struct kube_watch_req {
        const char *path;             /* a collection: kube_path(..., NULL name) */
        const char *label_selector;   /* raw selector ("a=b,c"), encoded here; NULL = none */
        const char *field_selector;   /* e.g. "metadata.name=b4-sbx-..."; NULL = none */
        const char *resource_version; /* start after it; NULL = "the most recent" */
        unsigned timeout_s;           /* the server's timeoutSeconds; 0 = 300 */
        int cancel_fd;                /* readable = stop (-ECANCELED); -EBADF = none */
};

/* Caps on what a watch may send. */
#define KUBE_WATCH_EVENT_MAX (4u * 1024 * 1024) /* one NDJSON line */

/**
 * kube_watch() - run one watch until the server ends it, @fn stops it, or cancel
 * Asks for bookmarks (allowWatchBookmarks=true). Tracks the resourceVersion of every event
 * object (metadata.resourceVersion), bookmarks included.
 * @ret_rv: the last resourceVersion seen, heap (NULL when none was); written on every
 *          return (a watch cut by a transport error resumes from it), may be NULL
 * Return: 0 (the server ended the watch: watch again from *ret_rv); -ESTALE (410 Gone, as
 * the HTTP status or an ERROR event: list again, then watch from the list's version); an
 * ERROR event's other Status as kube_status_decode() maps it; a non-2xx answer likewise;
 * -EPROTO (an event that is not JSON, of an unknown type, without an object, or a line
 * over KUBE_WATCH_EVENT_MAX); -ECANCELED; a negative return of @fn; transport errors as
 * kube_request().
 */
int kube_watch(struct kube_client *c,
               const struct kube_watch_req *req,
               kube_event_fn fn,
               void *userdata,
               char **ret_rv,
               struct b4_error *err);

/**
 * kube_list() - every object of the collection @path (paginated: limit=500 and continue)
 * @label_selector, @field_selector: raw, encoded here; NULL = none
 * @ret_items: a new array of the objects (jv_unref); @ret_rv: the list's resourceVersion,
 *             heap (the version to watch from); both written only on success, may be NULL
 * Return: 0; -E2BIG (more than KUBE_LIST_MAX_ITEMS objects); -EPROTO (a page that is not
 * a list); -ESTALE (410: the continue token expired mid-list); the errors of kube_request().
 */
int kube_list(struct kube_client *c,
              const char *path,
              const char *label_selector,
              const char *field_selector,
              struct jv **ret_items,
              char **ret_rv,
              struct b4_error *err);

#define KUBE_LIST_MAX_ITEMS 100000u

/*
 * A shared informer (informer.c): one LIST then WATCH of a collection by label selector, kept
 * in memory and kept going (a watch the server ends is resumed from its last version; 410
 * lists again; other failures list again after a back-off of 1 s doubling to 30 s), so that
 * any number of waiters read state without API requests. Objects are keyed by
 * metadata.name (a namespaced collection). Thread-safe.
 */
struct kube_informer;

/*
 * Told of every change, in the informer's thread, outside its lock: ADDED, MODIFIED and
 * DELETED (a relist reports what changed while no watch ran). @object is borrowed.
 */
typedef void (*kube_informer_fn)(enum kube_event_type type,
                                 const struct jv *object,
                                 void *userdata);

/**
 * kube_informer_new() - start watching @path (a collection) with @label_selector (NULL = all)
 * @c:  borrowed; must outlive the informer
 * @fn: optional (NULL); @userdata is passed to it
 * Return: 0 (the first list may still be running: kube_informer_wait_synced()), -ENOMEM,
 * -EAGAIN (no thread).
 */
int kube_informer_new(struct kube_client *c,
                      const char *path,
                      const char *label_selector,
                      kube_informer_fn fn,
                      void *userdata,
                      struct kube_informer **ret,
                      struct b4_error *err);
/** kube_informer_free() - stop the thread (a watch in flight is cancelled) and free. NULL ok. */
struct kube_informer *kube_informer_free(struct kube_informer *inf);

static inline void kube_informer_freep(struct kube_informer **inf)
{
        if (*inf)
                *inf = kube_informer_free(*inf);
}

/**
 * kube_informer_wait_synced() - wait for the first complete list
 * Return: 0; -EACCES at once when the server refuses the list or the watch (RBAC); -ETIMEDOUT
 * (the message says why the lists failed, if they did).
 */
int kube_informer_wait_synced(struct kube_informer *inf,
                              uint64_t deadline_ms,
                              struct b4_error *err);
/** kube_informer_live() - listed, and no list or watch has failed since the last one that
 * worked: its cache follows the server. */
bool kube_informer_live(struct kube_informer *inf);
/** kube_informer_get() - the cached object named @name: a new reference, NULL when absent. */
struct jv *kube_informer_get(struct kube_informer *inf, const char *name);

/** kube_informer_snapshot() - every cached object now, as a new array of references
 * (@ret, jv_unref). No API request. Return: 0, -ENOMEM. */
int kube_informer_snapshot(struct kube_informer *inf, struct jv **ret);

/*
 * A waiter's test of the object named in kube_informer_wait() (NULL = absent), run under the
 * informer's lock on every change: keep it short and never call the informer from it.
 * Return: 0 = keep waiting, > 0 = done, < 0 = give up with that error (message in @err).
 */
typedef int (*kube_informer_check_fn)(const struct jv *object,
                                      void *userdata,
                                      struct b4_error *err);

/**
 * kube_informer_wait() - wait until @check says done for the object named @name
 * Waits for the first list first. No API request: the informer's cache only.
 * @ret: optional; the object when @check said done (a new reference, NULL when absent)
 * Return: @check's positive value; its negative one; -ETIMEDOUT past @deadline_ms
 * (CLOCK_MONOTONIC ms); -ECANCELED (@cancel_fd readable; -EBADF = none).
 */
int kube_informer_wait(struct kube_informer *inf,
                       const char *name,
                       kube_informer_check_fn check,
                       void *userdata,
                       uint64_t deadline_ms,
                       int cancel_fd,
                       struct jv **ret,
                       struct b4_error *err);
