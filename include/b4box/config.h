/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * b4box.json: the configuration. This header owns the parsed form; the loader validates with
 * the reference's exact refusal texts (§2.2-2.4) and collects every refusal, one message per
 * problem. docs/configuration.md lists every key, default, bound and message.
 *
 * Everything a struct b4_config holds is owned by it and freed by b4_config_free().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"
#include "b4box/policy.h"

/* `sandbox.provider`: which backend, and its options. */
struct b4_provider_config {
        char *type;        /* owned: "native" | "docker" | "kubernetes" | "fake" */
        char *scope;       /* owned; required, non-empty after trim */
        char *image;       /* owned; NULL = provider default ("host" for native) */
        char **images;     /* owned strv; exact references or glob patterns a thread may name */
        char *state_dir;   /* owned; absolute; set by the program (--state), not the file */
        char *docker_host; /* docker: "unix:///var/run/docker.sock" by default */
        /* kubernetes (docs/configuration.md): in-cluster keys, or kubeconfig (+ context);
         * with kubeconfig set, kube_api, kube_token_file and kube_ca_file are NULL */
        char *kube_api; /* API server URL */
        char *kube_namespace;
        char *kube_token_file;
        char *kube_ca_file;
        char *kubeconfig;                 /* owned absolute path, or NULL */
        char *kube_context;               /* owned; NULL = the kubeconfig's current-context */
        char *kube_storage_class;         /* owned; NULL = the cluster's default class */
        uint32_t kube_startup_timeout_ms; /* how long acquire waits for Running */
        bool kube_user_namespace;         /* "hostUsers": false: each Pod its own user namespace */
        /* warmPool (docs/kubernetes-provider.md "Warm pools"): the key given at all turns
         * the label lookups of adopted threads on; size 0 makes no pairs */
        bool kube_pool;
        uint32_t kube_pool_size; /* ready Pod+PVC pairs; 0 = none */
        bool kube_pool_fill;     /* set by the program, not the file: this process keeps the pool
                                    filled (b4box serve); one-shot commands make no pairs */
        bool kube_informer;      /* set by the program, not the file: a long-lived process
                                    (b4box serve) lists and watches the scope's Pods once and
                                    waits on that; one-shot commands watch each Pod */
        char *kube_pool_owner;   /* owned; NULL = derived (the host name) */
        struct b4_policy *kube_pool_policy; /* owned; the app's policy the pairs are made for;
                                               NULL = b4_policy_init()'s defaults */
        uint32_t id_start, id_size;         /* native as root: host id range for the threads' user
                                               namespaces (blocks of 65536); 0 = the default */
};

/* startupTimeoutMs: the reference's default; at most one hour. */
#define B4_KUBE_DEFAULT_STARTUP_TIMEOUT_MS 60000u
#define B4_KUBE_MAX_STARTUP_TIMEOUT_MS     3600000u
#define B4_KUBE_MAX_POOL_SIZE              64u

B4_PUBLIC void b4_provider_config_clear(struct b4_provider_config *c);

/* Largest b4box.json b4_config_load() reads, and most refusals reported. */
#define B4_CONFIG_MAX_BYTES  (1024u * 1024u)
#define B4_CONFIG_MAX_ERRORS 100

#define B4_DEFAULT_LISTEN              "127.0.0.1:4100"
#define B4_DEFAULT_SCOPE               "b4box"
#define B4_DEFAULT_MAX_BODY_BYTES      (1024u * 1024u)
#define B4_DEFAULT_MAX_TOOL_BODY_BYTES (32u * 1024u * 1024u)
#define B4_DEFAULT_MAX_CONNECTIONS     1024u
#define B4_DEFAULT_MAX_CONNECTIONS_IP  256u
#define B4_DEFAULT_REQUEST_TIMEOUT_MS  30000u
#define B4_DEFAULT_STREAM_KEEPALIVE_MS 15000u
#define B4_DEFAULT_HEADER_TIMEOUT_MS   10000u
#define B4_DEFAULT_RESOLVER_TIMEOUT_MS 30000u
#define B4_DEFAULT_READ_TIMEOUT_MS     120000u

/* `server`: where and how the HTTP API listens. */
struct b4_server_config {
        char *listen;                 /* owned; "host:port", "[v6]:port" or "unix:/abs/path" */
        uint64_t max_body_bytes;      /* JSON request bodies; default 1 MiB */
        uint64_t max_tool_body_bytes; /* tool calls and runs; default 32 MiB */
        uint32_t max_connections;     /* concurrent connections; default 1024 */
        uint32_t max_connections_ip;  /* per client address; default 256 */
        uint64_t request_timeout_ms;  /* inactivity, and the body's deadline; default 30000 */
        uint64_t header_timeout_ms;   /* a request's headers' deadline; default 10000 */
        uint64_t stream_keepalive_ms; /* a streamed reply's keepalive period; default 15000 */
};

/* An external resolver: run @argv, JSON on stdin, JSON on stdout. */
struct b4_resolver {
        char **argv;         /* owned strv, >= 1 entry; a relative argv[0] with '/' is made
                                absolute against the config's folder */
        uint64_t timeout_ms; /* default B4_DEFAULT_RESOLVER_TIMEOUT_MS */
};

/* `source.files[]` entry: copied from another app file, or inline text. */
struct b4_workspace_file {
        char *path;      /* owned; portable relative path inside the workspace */
        char *file;      /* owned; app-relative source file, or NULL */
        char *text;      /* owned; inline UTF-8 content, or NULL */
        bool executable; /* inline text only */
};

struct b4_environment_link {
        char *path;   /* owned; portable relative path */
        char *target; /* owned; absolute portable path */
};

/* A static workspace definition (reference §7.2); captured by a later step. */
struct b4_workspace_def {
        char *directory;            /* owned; "." or a portable path (app relative) */
        char **include;             /* owned strv: the exact inventory */
        char **exclude_directories; /* owned strv; may be NULL */
        struct b4_workspace_file *files;
        size_t n_files;
        struct b4_environment_link *links;
        size_t n_links;
        bool baseline_git; /* baseline: "git" */
};

/* A per-thread policy (reference §2.4): only what a thread may set. */
struct b4_thread_policy {
        bool has_network;
        enum b4_network_mode network;
        /* set: the thread's allowlist (deny) or denylist (allow), narrowing the app's; unset:
         * the app's list when the mode is the app's, else none */
        bool has_network_list;
        struct b4_net_entry *network_list; /* owned */
        size_t n_network_list;
        bool has_env;           /* set: replaces the app's env wholesale */
        struct b4_env_var *env; /* owned, sorted by name */
        size_t n_env;
        uint64_t memory_mb;  /* 0 = unset */
        double cpus;         /* 0 = unset */
        uint64_t timeout_ms; /* 0 = unset */
};

/* One tool's patterns of a thread's permission lists. */
struct b4_tool_patterns {
        char *tool;      /* owned */
        char **patterns; /* owned strv */
};

struct b4_thread_sandbox {
        struct b4_workspace_def workspace;
        char *image; /* owned; environment.image, or NULL */
        struct b4_thread_policy policy;
        struct b4_tool_patterns *allow; /* owned, sorted by tool */
        size_t n_allow;
        struct b4_tool_patterns *deny; /* owned, sorted by tool */
        size_t n_deny;
};

struct b4_thread_target {
        char *value; /* owned; the metadata value that selects it */
        struct b4_thread_sandbox sandbox;
};

/* Declarative `sandbox.thread`: metadata[key] selects one of values, else default. */
struct b4_thread_targets {
        char *key; /* owned metadata key */
        struct b4_thread_target *values;
        size_t n_values;
        struct b4_thread_sandbox *fallback; /* owned; "default", or NULL (refuse the thread) */
};

enum b4_workspace_kind {
        B4_WORKSPACE_NONE = 0,     /* provider storage: no managed workspace */
        B4_WORKSPACE_STATIC = 1,   /* a static definition */
        B4_WORKSPACE_RESOLVER = 2, /* an external resolver command */
};

enum b4_thread_kind {
        B4_THREAD_NONE = 0,
        B4_THREAD_RESOLVER = 1, /* an external resolver command */
        B4_THREAD_TARGETS = 2,  /* declarative targets */
};

/* `sandbox.stagedWorkspaces` (defaults and bounds: reference §2.2). */
struct b4_staged_config {
        bool enabled;
        uint64_t max_upload_bytes;  /* default 100663296 (96 MiB), 1..96 MiB */
        uint64_t retention_ms;      /* default 86400000, 60000..2592000000 */
        uint64_t max_staged_bytes;  /* default 1 GiB, 1..16 GiB */
        uint64_t upload_timeout_ms; /* default 120000, 1000..1800000 */
};

struct b4_sandbox_config {
        struct b4_provider_config provider;
        struct b4_policy policy;  /* network, env, resources, security, output cap */
        uint64_t idle_timeout_ms; /* default B4_DEFAULT_IDLE_TIMEOUT_MS */
        uint64_t idle_pause_ms;   /* idlePauseMs; 0 (absent) = never pause when idle */
        enum b4_workspace_kind workspace_kind;
        struct b4_workspace_def workspace;     /* with B4_WORKSPACE_STATIC */
        struct b4_resolver workspace_resolver; /* with B4_WORKSPACE_RESOLVER */
        enum b4_thread_kind thread_kind;
        struct b4_resolver thread_resolver;      /* with B4_THREAD_RESOLVER */
        struct b4_thread_targets thread_targets; /* with B4_THREAD_TARGETS */
        bool workspace_read;                     /* workspaceRead: "http" */
        uint64_t workspace_read_timeout_ms;      /* default 120000 */
        struct b4_staged_config staged;
};

enum b4_permission_mode {
        B4_PERMISSION_NON_INTERACTIVE = 0, /* default for a server: unknown = denied */
        B4_PERMISSION_INTERACTIVE = 1,
        B4_PERMISSION_BYPASS = 2,
};

/* The tool keys of permissions.allow / permissions.deny. */
enum b4_permission_key {
        B4_PERM_BASH = 0,
        B4_PERM_READ_FILE = 1,
        B4_PERM_WRITE_FILE = 2,
        B4_PERM_LIST_DIR = 3,
        B4_PERM_TOOL = 4,
        B4_PERM__COUNT = 5,
};

struct b4_permissions_config {
        bool present; /* the block exists; without it no permission gate applies (the
                         sandbox is the boundary), as in the reference without a store */
        enum b4_permission_mode mode;
        char **allow[B4_PERM__COUNT]; /* owned strvs of patterns, NULL = none */
        char **deny[B4_PERM__COUNT];
};

enum b4_access_op {
        B4_OP_THREAD_CREATE = 1 << 0,
        B4_OP_THREAD_READ = 1 << 1,
        B4_OP_THREAD_UPDATE = 1 << 2,
        B4_OP_THREAD_DELETE = 1 << 3,
        B4_OP_THREAD_RUN = 1 << 4,
        B4_OP_THREAD_WORKSPACE = 1 << 5,
        B4_OP_SOURCE_PUT = 1 << 6,     /* workspace.source.put */
        B4_OP_THREAD_APPROVE = 1 << 7, /* thread.approve: answer permission requests; thread.run
                                          does not imply it (a principal must not approve its
                                          own requests) */
        B4_OP_SOURCE_READ = 1 << 8,    /* workspace.source.read: list and describe uploads */
        B4_OP_SOURCE_DELETE = 1 << 9,  /* workspace.source.delete */
};

/**
 * b4_access_op_name() - the configured name of one operation bit ("thread.run")
 * Return: a static string, or NULL when @op is not exactly one known operation.
 */
B4_PUBLIC const char *b4_access_op_name(enum b4_access_op op);

enum b4_access_threads {
        B4_THREADS_OWN = 0, /* only threads this principal created */
        B4_THREADS_ALL = 1,
};

struct b4_principal {
        char *name;          /* owned; unique */
        char *token_file;    /* owned absolute path, or NULL */
        char *token_env;     /* owned variable name, or NULL (exactly one of the two is set) */
        unsigned operations; /* enum b4_access_op bits */
        enum b4_access_threads threads;
};

#define B4_DEFAULT_DECISION_TIMEOUT_MS 1000

struct b4_thread_access_config {
        bool present; /* the block exists: a thread-access policy is configured */
        struct b4_principal *principals;
        size_t n_principals;
        bool staged_sources_own; /* stagedSources: "own" */
        /* threadAccess.command: a long-running policy program asked about every request
         * (docs/configuration.md "The policy program"); NULL = none. Owned strv. */
        char **command;
        uint64_t decision_timeout_ms; /* decisionTimeoutMs, default B4_DEFAULT_DECISION_... */
};

struct b4_config {
        char *base_dir; /* owned; absolute folder relative paths are resolved against */
        struct b4_server_config server;
        struct b4_sandbox_config sandbox;
        struct b4_permissions_config permissions;
        struct b4_thread_access_config thread_access;
};

/**
 * b4_config_parse() - parse and validate a b4box.json text
 * @json:       @len bytes, borrowed
 * @base_dir:   folder relative paths are resolved against; NULL = the current directory
 * @ret:        on success, a new config owned by the caller (b4_config_free())
 * @ret_errors: on -EINVAL, a strv owned by the caller with one message per refusal (at most
 *              B4_CONFIG_MAX_ERRORS, then one line saying how many more were found)
 * @err:        optional; filled on failure
 *
 * Return: 0; -EINVAL when the text is refused (see @ret_errors); -ENOMEM.
 */
B4_PUBLIC int b4_config_parse(const char *json,
                              size_t len,
                              const char *base_dir,
                              struct b4_config **ret,
                              char ***ret_errors,
                              struct b4_error *err);

/**
 * b4_config_load() - read @path (at most B4_CONFIG_MAX_BYTES) and b4_config_parse() it with
 * the file's folder as base_dir.
 *
 * Return: as b4_config_parse(); also -ENOENT and other -errno when the file cannot be read
 * (message in @err, @ret_errors untouched), -EFBIG when it is too large.
 */
B4_PUBLIC int b4_config_load(const char *path,
                             struct b4_config **ret,
                             char ***ret_errors,
                             struct b4_error *err);

/**
 * b4_config_default() - the configuration with no file: the native provider, scope "b4box",
 * the seeds' defaults everywhere, base_dir the current directory.
 * Return: 0 or -ENOMEM.
 */
B4_PUBLIC int b4_config_default(struct b4_config **ret, struct b4_error *err);

/** b4_config_free() - free @c and all it owns (NULL ok). Return: NULL. */
B4_PUBLIC struct b4_config *b4_config_free(struct b4_config *c);

/** b4_config_policy() - the app's effective sandbox policy; borrowed, lives as long as @c. */
B4_PUBLIC const struct b4_policy *b4_config_policy(const struct b4_config *c);

/** b4_config_errors_free() - free a @ret_errors list (NULL ok). Return: NULL. */
B4_PUBLIC char **b4_config_errors_free(char **errors);

/** b4_permission_key_name() - "bash", "readFile", ...; static string, NULL out of range. */
B4_PUBLIC const char *b4_permission_key_name(enum b4_permission_key k);
