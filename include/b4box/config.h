/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * b4box.json: the configuration. This header owns the parsed form; the loader validates with
 * the reference's exact refusal texts (§2.2-2.4).
 */

#include <stdbool.h>
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
        char *kube_api;    /* kubernetes: API server URL */
        char *kube_namespace;
        char *kube_token_file;
        char *kube_ca_file;
};

B4_PUBLIC void b4_provider_config_clear(struct b4_provider_config *c);
