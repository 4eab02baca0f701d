/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Internals of the Docker provider, one section per module:
 *   api.c       the Engine API client: version negotiation, error mapping, the calls we use
 *   tar.c       libarchive glue: pull a tar from an HTTP stream, build one in memory
 *   exec.c      commands through the exec API: demultiplexing, caps, timeout, cancel
 *   agent.c     b4box-agent in a container over one hijacked exec stream: the link
 *   fs.c        file operations of a target: through its agent, else the archive endpoints
 *               and execs as the sandbox user (the fallback)
 *   dac.c       the sandbox user's DAC, applied to tar members that dockerd read as root
 *   identity.c  the launch configuration, its JSON and the keeper identity (reference §3.3)
 *   provider.c  the provider object: acquire/release/destroy, recovery, preflight, images
 *   reader.c    read-only reader containers (reference §3.8)
 *   seccomp.c   the containers' seccomp profile, from core's syscall policy
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "b4box/error.h"
#include "b4box/policy.h"
#include "b4box/provider-impl.h"

#include "agent/agent-fs-ops.h"

struct jv;
struct http_stream;

/* ---- api.c ------------------------------------------------------------------------------ */

#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"
#define DOCKER_API_MAX        "1.41" /* the newest API version we speak */
#define DOCKER_API_MIN_MINOR  40     /* 1.40: PidsLimit/Init/NanoCpus/WorkingDir all exist */

struct docker_client;

/* @host: "unix:///path", a bare absolute path, or NULL ($DOCKER_HOST, else the default). */
int docker_client_new(const char *host, struct docker_client **ret, struct b4_error *err);
struct docker_client *docker_client_free(struct docker_client *d);
const char *docker_client_socket(const struct docker_client *d);

/*
 * One JSON exchange with the versioned API: @path without the "/vX.Y" prefix, @body borrowed
 * (NULL = none), *ret_json the parsed response (NULL allowed, or when the body is empty).
 * Non-2xx: 404 -ENOENT, 409 -EEXIST, 401/403 -EACCES, 400 -EINVAL, 5xx -EIO, with the
 * daemon's own message in @err. 304 (already started/stopped) counts as success.
 */
int docker_call(struct docker_client *d,
                const char *method,
                const char *path,
                const struct jv *body,
                struct jv **ret_json,
                struct b4_error *err);
/* Raw form: @ctype/@body/@len for non-JSON bodies; response body discarded. */
int docker_call_raw(struct docker_client *d,
                    const char *method,
                    const char *path,
                    const char *ctype,
                    const void *body,
                    size_t len,
                    uint64_t timeout_ms,
                    struct b4_error *err);
/* Open a streaming request; a non-2xx status is mapped as for docker_call(). */
int docker_stream(struct docker_client *d,
                  const char *method,
                  const char *path,
                  const struct jv *body,
                  int cancel_fd,
                  struct http_stream **ret,
                  struct b4_error *err);

/* A hijacked connection (POST with "Upgrade: tcp"): a raw two-way byte stream from now on. */
struct docker_hijacked {
        int fd;        /* owned */
        char *pending; /* owned: stream bytes that arrived with the response head */
        size_t pending_len;
};

/* POST @path (e.g. /exec/{id}/start) with the JSON @body and take the connection over.
 * A non-101/200 status is mapped as for docker_call(). */
int docker_hijack(struct docker_client *d,
                  const char *path,
                  const struct jv *body,
                  struct docker_hijacked *ret,
                  struct b4_error *err);
/*
 * docker_image_save() - GET /images/{ref}/get: the `docker save` archive of @ref written to
 * @out_fd as it arrives (each read bounded by 60 s of silence).
 * Return: 0; -ENOENT (no such image: "Docker has no image 'REF'"), the errors of
 * docker_call(), -ETIMEDOUT, -errno of write(2).
 */
int docker_image_save(struct docker_client *d, const char *ref, int out_fd, struct b4_error *err);
/* GET /version: the daemon's version string ("20.10.24"). */
int docker_server_version(struct docker_client *d, char **ret, struct b4_error *err);
/* Decode base64 (standard or URL alphabet), skipping whitespace. Return: 0, -EPROTO, -ENOMEM. */
int docker_base64_decode(const char *in, size_t n, char **ret, size_t *ret_len);
/* Reference §3.6 admission failure: the exec never started because runc could not fork. */
bool docker_admission_failure(const char *text);
/* Reference §3.6 started-shell fork failure: every non-empty line of @errout is a shell's
 * "can't fork" (sh: [line ]<N>: ...). */
bool docker_shell_fork_failure(const char *errout);
/* URL-encode @s for a query value. */
int docker_urlencode(const char *s, char **ret);

struct docker_path_stat {
        char *name; /* owned */
        uint64_t size;
        uint32_t mode; /* Go os.FileMode bits */
        int64_t mtime_ms;
        char *link_target; /* owned; for links: the resolved in-container path; else NULL */
};

#define GO_MODE_DIR     (1u << 31)
#define GO_MODE_SYMLINK (1u << 27)
#define GO_MODE_TYPE \
 (GO_MODE_DIR | GO_MODE_SYMLINK | (1u << 26) | (1u << 25) | (1u << 24) | (1u << 21) | (1u << 19))

void docker_path_stat_clear(struct docker_path_stat *st);
/* Decode an X-Docker-Container-Path-Stat header. Return: 0, -EPROTO. */
int docker_path_stat_parse(const char *header, struct docker_path_stat *ret);
/* HEAD /containers/{c}/archive: lstat of @path. Missing -ENOENT. */
int docker_archive_stat(struct docker_client *d,
                        const char *container,
                        const char *path,
                        struct docker_path_stat *ret,
                        struct b4_error *err);
/* GET /containers/{c}/archive as a stream. */
int docker_archive_get(struct docker_client *d,
                       const char *container,
                       const char *path,
                       struct http_stream **ret,
                       struct b4_error *err);
/* PUT /containers/{c}/archive: extract @tar into the existing directory @dir. */
int docker_archive_put(struct docker_client *d,
                       const char *container,
                       const char *dir,
                       const void *tar,
                       size_t len,
                       struct b4_error *err);

/* ---- tar.c ------------------------------------------------------------------------------ */

struct archive;

/* A libarchive reader pulling from @s (borrowed; it must outlive the reader). */
int tar_reader_open(struct http_stream *s, struct archive **ret, struct b4_error *err);
/* The same, failing (archive error E2BIG) once more than @budget bytes were pulled. */
int tar_reader_open_budget(struct http_stream *s,
                           uint64_t budget,
                           struct archive **ret,
                           struct b4_error *err);
void tar_reader_free(struct archive *a);

struct tar_builder;
int tar_builder_new(struct tar_builder **ret);
/* Add a regular file. @name relative, '/'-separated. */
int tar_builder_file(struct tar_builder *t,
                     const char *name,
                     const void *data,
                     size_t len,
                     unsigned mode,
                     uid_t uid,
                     gid_t gid);
/* Finish; the archive (ret, ret_len) points into @t. */
int tar_builder_finish(struct tar_builder *t, const void **ret, size_t *ret_len);
struct tar_builder *tar_builder_free(struct tar_builder *t);

/* ---- exec.c ----------------------------------------------------------------------------- */

struct docker_exec_spec {
        const char *container;
        char **argv;              /* borrowed */
        char **env;               /* borrowed "K=V" list; NULL = none */
        const char *user;         /* NULL = the container's */
        uint64_t timeout_ms;      /* 0 = none */
        size_t output_cap;        /* per stream */
        struct b4_cancel *cancel; /* optional */
};

/* Run one command; ret like b4_exec_result (timed_out/cancelled set, exit 124 on timeout
 * without the seeds' line: callers add it). Return: 0, or -errno when it could not run. */
int docker_exec_run(struct docker_client *d,
                    const struct docker_exec_spec *s,
                    struct b4_exec_result *ret,
                    struct b4_error *err);
/* The same, for a command that prints @marker + "\n" first: it is stripped from stdout and
 * *ret_started says whether it was seen (the command provably started in the container). */
int docker_exec_run_marked(struct docker_client *d,
                           const struct docker_exec_spec *s,
                           const char *marker,
                           bool *ret_started,
                           struct b4_exec_result *ret,
                           struct b4_error *err);
/* POSIX single-quote @s onto a heap string. */
int docker_shell_quote(const char *s, char **ret);

/* ---- dac.c ------------------------------------------------------------------------------ */

#define DOCKER_DAC_MAX_GROUPS 64
#define DOCKER_DAC_R          4u
#define DOCKER_DAC_W          2u
#define DOCKER_DAC_X          1u

/* Who the sandbox user is inside the container, as the kernel checks it. */
struct docker_dac {
        uid_t uid;
        gid_t groups[DOCKER_DAC_MAX_GROUPS]; /* the egid and every supplementary group */
        size_t n_groups;
        bool override;    /* CAP_DAC_OVERRIDE in CapEff */
        bool read_search; /* CAP_DAC_READ_SEARCH in CapEff */
};

/* Parse the identity probe's "U <uid>", "G <gids...>", "C <CapEff hex>" lines.
 * Return: 0, -EPROTO (malformed or incomplete), -E2BIG (too many groups). */
int docker_dac_parse(const char *text, struct docker_dac *ret);
/* Would @u get @want (DOCKER_DAC_R|W|X) on an inode owned by @owner:@group with @mode? */
bool docker_dac_allows(const struct docker_dac *u,
                       uid_t owner,
                       gid_t group,
                       unsigned mode,
                       bool is_dir,
                       unsigned want);

/* ---- agent.c ---------------------------------------------------------------------------- */

struct agent_conn;
struct agent_transport;
struct docker_agent;

/* The link to b4box-agent (at DOCKER_AGENT_PATH) in @container, run as @user (NULL: the
 * container's), with --read-only when @read_only. Nothing is started yet. @d is borrowed.
 * Return: 0 or -ENOMEM. */
int docker_agent_new(struct docker_client *d,
                     const char *container,
                     const char *user,
                     bool read_only,
                     struct docker_agent **ret);
/* Close the connection (the agent exits at the end of its stdin). NULL ok. Return: NULL. */
struct docker_agent *docker_agent_free(struct docker_agent *a);
/*
 * The live connection, made on first use: one exec of the agent with its stdin attached.
 * *ret is borrowed: valid until docker_agent_reset()/free, which only the thread's exclusive
 * lease (or the owner) may call. Return: 0; -ENOTCONN (lost, or the agent could not start:
 * core recovers); -EAGAIN (runc could not fork it: PID exhaustion); -ENOMEM.
 */
int docker_agent_conn(struct docker_agent *a, struct agent_conn **ret, struct b4_error *err);
/* Whether a connection was made and is now dead. */
bool docker_agent_lost(struct docker_agent *a);
/* Drop the connection (exclusive lease held): the next docker_agent_conn() makes a new one. */
void docker_agent_reset(struct docker_agent *a);
/* The transport over a hijacked exec stream @fd (owned; closed on failure too) whose first
 * @pending_len bytes are @pending (owned, may be NULL): hands the client the payload of
 * Docker's stdout frames, keeps the tail of stderr, refuses a malformed frame (-EPROTO).
 * Return: 0 or -ENOMEM. */
int docker_agent_transport(int fd, char *pending, size_t pending_len, struct agent_transport *ret);

/* ---- fs.c ------------------------------------------------------------------------------- */

/* Which container a filesystem view talks to; embedded by handles and readers. */
struct docker_fs_target {
        struct docker_client *d; /* borrowed */
        const char *container;   /* borrowed name */
        uid_t uid;               /* owner of written files */
        gid_t gid;
};

/* The fallback members below take the agent's answer @r to @op instead (agent-fs-ops.h). */
bool docker_fs_falls_back(enum agent_fs_op op, int r);

int docker_fs_read_file(struct docker_fs_target *t,
                        const char *path,
                        unsigned flags,
                        uint64_t max_bytes,
                        char **ret,
                        size_t *ret_len,
                        struct b4_error *err);
int docker_fs_lstat(struct docker_fs_target *t,
                    const char *path,
                    struct b4_stat *ret,
                    struct b4_error *err);
int docker_fs_stat(struct docker_fs_target *t,
                   const char *path,
                   unsigned flags,
                   struct b4_stat *ret,
                   struct b4_error *err);
int docker_fs_list_dir(struct docker_fs_target *t,
                       const char *path,
                       unsigned flags,
                       char ***ret,
                       struct b4_error *err);
int docker_fs_realpath(struct docker_fs_target *t,
                       const char *path,
                       char **ret,
                       struct b4_error *err);
int docker_fs_walk(struct docker_fs_target *t,
                   const char *path,
                   size_t max_entries,
                   char *const *prune,
                   struct b4_walk_entry **ret,
                   size_t *ret_n,
                   struct b4_error *err);
int docker_fs_read_files(struct docker_fs_target *t,
                         const struct b4_read_req *reqs,
                         size_t n,
                         struct b4_blob **ret,
                         struct b4_error *err);
int docker_fs_write_file(struct docker_fs_target *t,
                         const char *path,
                         unsigned flags,
                         const void *data,
                         size_t len,
                         struct b4_error *err);
int docker_fs_mkdir_p(struct docker_fs_target *t, const char *path, struct b4_error *err);
int docker_fs_remove(struct docker_fs_target *t, const char *path, struct b4_error *err);
int docker_fs_touch(struct docker_fs_target *t,
                    const char *path,
                    unsigned flags,
                    struct b4_error *err);

/* ---- identity.c ------------------------------------------------------------------------- */

/* The keeper's seccomp profile (seccomp.c): "seccomp=<json>" for SecurityOpt and the
 * sha256 hex of the JSON, labelled b4.sandbox.seccomp so that a profile change replaces it. */
struct docker_seccomp {
        const char *opt;
        const char *digest;
};

struct docker_net_spec;

/* Where the agent binary is mounted in a keeper or reader (read-only). */
#define DOCKER_AGENT_DIR  "/.b4box"
#define DOCKER_AGENT_PATH DOCKER_AGENT_DIR "/agent"

/* What a keeper mounts besides its policy. */
struct docker_keeper_opts {
        const char *scope;        /* the volume's b4.sandbox.scope label */
        bool copy_image;          /* let Docker copy the image's /workspace into an empty volume */
        const char *agent;        /* host path of b4box-agent, bound read-only at
                                   * DOCKER_AGENT_PATH; NULL: none */
        const char *agent_volume; /* or the volume holding it, mounted read-only at
                                   * DOCKER_AGENT_DIR; NULL: none */
        const struct docker_net_spec *net; /* the keeper's network (net.h) */
};

/* The Mounts entry of the agent: @bind (a host path) at DOCKER_AGENT_PATH, else @volume at
 * DOCKER_AGENT_DIR, read-only. NULL on OOM. */
struct jv *docker_agent_mount_json(const char *bind, const char *volume);

/* The container-create body of a keeper (reference §3.4 step 5 as Engine API fields) under
 * the seccomp profile @sc. Its workspace is a Mounts entry that creates the labelled volume
 * b4-sbx-vol-<id> when absent, so no separate volume create is needed. */
int docker_keeper_body(const char *image,
                       const struct b4_policy *p,
                       const char *id,
                       const char *identity,
                       const struct docker_seccomp *sc,
                       const struct docker_keeper_opts *o,
                       struct jv **ret);
/* The docker "User" value of @p, or NULL for the image default. */
int docker_policy_user(const struct b4_policy *p, char **ret);

/* ---- seccomp.c -------------------------------------------------------------------------- */

/* Core's syscall policy as a Docker seccomp profile for the native architecture (an allow
 * list, default errno; docs/docker.md). Return: 0, -ENOMEM, or -EAFNOSUPPORT on an
 * architecture without a profile. */
int docker_seccomp_profile(struct jv **ret);
/* That profile as a SecurityOpt value "seccomp=<compact json>" (heap) and the sha256 hex of
 * the JSON. Return: as docker_seccomp_profile(). */
int docker_seccomp_opt(char **ret_opt, char ret_digest[65]);

/* ---- reader.c --------------------------------------------------------------------------- */

struct docker_reader_spec {
        struct docker_client *d; /* borrowed; must outlive the reader */
        const char *image;
        const char *volume;
        const char *resource_id;
        const char *thread_id;
        const char *name_prefix;  /* "b4-sbx-rdr-" */
        const char *seccomp_opt;  /* "seccomp=<json>" */
        const char *agent_bind;   /* b4box-agent to bind in, */
        const char *agent_volume; /* or its volume to mount; both NULL: the fallback */
        bool run_as_non_root;
        uint32_t uid, gid;
};

int docker_reader_open(const struct docker_reader_spec *s,
                       struct b4_reader **ret,
                       struct b4_error *err);

/* ---- provider.c ------------------------------------------------------------------------- */

/* Test hook: the docker client of a docker provider, or NULL. */
struct docker_client *docker_provider_client(struct b4_provider *p);
