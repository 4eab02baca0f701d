/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube exec against the fake API server (tests/fakes/kube-apiserver.py) over TLS, from the
 * kubeconfig it wrote, through kube-client's configuration (kube_config_resolve) and
 * kube_exec_conn_opts(): one-shot commands (echo, stdin through cat, exit 3, stderr, v4, a
 * missing program, a missing Pod, a bad token), b4box-agent copied into the Pod with one
 * exec and then an agent session over one long-lived exec stream (a write, a read, a
 * command), and the fake's faults: a refused upgrade (429), a connection dropped during the
 * upgrade, exec streams cut mid-way (one-shot and the agent's). With --bench N it prints the
 * exec setup and agent round trip figures instead.
 *
 *   fake-exec KUBECONFIG AGENT [--bench N]     (TAP on stdout)
 */

#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent-client.h"
#include "base/macro.h"
#include "base/time-util.h"
#include "json/json.h"
#include "kube/exec.h"
#include "kube/kube.h"

#define NS  "default"
#define POD "b4-sbx-x1"

static int tap_n, tap_failed;

static void check(bool ok, const char *name, const struct b4_error *err)
{
        tap_n++;
        if (!ok)
                tap_failed++;
        printf("%sok %d - %s\n", ok ? "" : "not ", tap_n, name);
        if (!ok && err && err->msg[0])
                printf("# %s\n", err->msg);
        fflush(stdout);
}

static const char pvc_json[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":"
        "\"b4-sbx-vol-x1\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"resources\":{"
        "\"requests\":{\"storage\":\"1Gi\"}}}}";
static const char pod_json[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" POD "\"},\"spec\":{"
        "\"automountServiceAccountToken\":false,\"securityContext\":{\"runAsNonRoot\":true,"
        "\"runAsUser\":1000,\"runAsGroup\":1000,\"fsGroup\":1000},\"containers\":[{\"name\":"
        "\"sandbox\",\"image\":\"node:24-slim\",\"command\":[\"sleep\",\"infinity\"],"
        "\"workingDir\":\"/workspace\",\"securityContext\":{\"allowPrivilegeEscalation\":false,"
        "\"readOnlyRootFilesystem\":true,\"capabilities\":{\"drop\":[\"ALL\"]}},"
        "\"volumeMounts\":[{\"name\":\"workspace\",\"mountPath\":\"/workspace\"},{\"name\":"
        "\"b4\",\"mountPath\":\"/b4\"}]}],\"volumes\":[{\"name\":\"workspace\","
        "\"persistentVolumeClaim\":{\"claimName\":\"b4-sbx-vol-x1\"}},{\"name\":\"b4\","
        "\"emptyDir\":{}}]}}";

static int create(struct kube_client *k,
                  const char *resource,
                  const char *json,
                  struct b4_error *err)
{
        cleanup_(jv_unrefp) struct jv *obj = NULL;
        cleanup_free char *path = kube_path("v1", NS, resource, NULL, NULL);
        int r = jv_parse(json, strlen(json), &obj, err);

        return r < 0 ? r : kube_create(k, path, obj, NULL, err);
}

/* The test waits by polling (the provider uses a watch; this is setup). */
static int wait_running(struct kube_client *k, struct b4_error *err)
{
        cleanup_free char *path = kube_path("v1", NS, "pods", POD, NULL);

        for (int i = 0; i < 200; i++) {
                cleanup_(jv_unrefp) struct jv *pod = NULL;
                const char *phase;
                int r = kube_get(k, path, &pod, err);

                if (r < 0)
                        return r;
                phase = jv_string(jv_object_get(jv_object_get(pod, "status"), "phase"));
                if (phase && strcmp(phase, "Running") == 0)
                        return 0;
                usleep(20 * 1000);
        }
        return b4_error_set(err, -ETIMEDOUT, "the Pod did not start");
}

static struct kube_conn_opts conn;

static int read_file(const char *path, char **ret, size_t *ret_len);
static int agent_open(struct agent_conn **ret, struct b4_error *err);

static int run(char **argv,
               const char *in,
               size_t in_len,
               bool v4,
               struct kube_exec_result *res,
               struct b4_error *err)
{
        struct kube_exec_target t = { .namespace_name = NS,
                                      .pod = POD,
                                      .container = "sandbox",
                                      .argv = argv,
                                      .v4_only = v4 };
        struct kube_exec_run_opts o = {
                .stdin_data = in, .stdin_len = in_len, .timeout_ms = 20000, .cancel_fd = -EBADF
        };

        *err = (struct b4_error){ 0 };
        return kube_exec_run(&conn, &t, &o, res, err);
}

/* a NULL-terminated argv of string literals */
#define ARGV(...) ((char **)(const char *[]){ __VA_ARGS__, NULL })

static void resumption(void);

static void one_shots(void)
{
        struct kube_exec_result res = { 0 };
        struct b4_error err = { 0 };
        int r;

        r = run(ARGV("echo", "hello world"), NULL, 0, false, &res, &err);
        check(r == 0 && res.exit_code == 0 && res.version == 5 && res.out &&
                      !strcmp(res.out, "hello world\n"),
              "echo over v5: stdout and exit 0", &err);
        kube_exec_result_clear(&res);
        r = run(ARGV("cat"), "from stdin\n", 11, false, &res, &err);
        check(r == 0 && res.exit_code == 0 && res.out && !strcmp(res.out, "from stdin\n"),
              "stdin through cat, ended by the v5 close signal", &err);
        kube_exec_result_clear(&res);
        r = run(ARGV("sh", "-c", "exit 3"), NULL, 0, false, &res, &err);
        check(r == 0 && res.exit_code == 3 && !res.no_status, "exit 3 is the Status' exit code",
              &err);
        kube_exec_result_clear(&res);
        r = run(ARGV("sh", "-c", "echo oops >&2; echo out; exit 1"), NULL, 0, false, &res, &err);
        check(r == 0 && res.exit_code == 1 && res.errout && !strcmp(res.errout, "oops\n") &&
                      res.out && !strcmp(res.out, "out\n"),
              "stderr apart from stdout", &err);
        kube_exec_result_clear(&res);
        r = run(ARGV("head", "-c", "5"), "v4in!", 5, true, &res, &err);
        check(r == 0 && res.version == 4 && res.exit_code == 0 && res.out &&
                      !strcmp(res.out, "v4in!"),
              "v4: self-delimited stdin (no close signal)", &err);
        kube_exec_result_clear(&res);
        r = run(ARGV("pwd"), NULL, 0, false, &res, &err);
        check(r == 0 && res.out && !strcmp(res.out, "/workspace\n"), "the container's workingDir",
              &err);
        kube_exec_result_clear(&res);
        r = run(ARGV("no-such-binary"), NULL, 0, false, &res, &err);
        check(r == -ENOEXEC && strstr(err.msg, "executable file not found"),
              "a missing program is a named failure (-ENOEXEC)", &err);
}

static void refusals(void)
{
        struct kube_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct kube_exec_target t = { .namespace_name = NS,
                                      .pod = "no-such-pod",
                                      .argv = ARGV("true") };
        struct kube_exec_run_opts o = { .cancel_fd = -EBADF };
        struct kube_conn_opts bad = conn;
        int r;

        r = kube_exec_run(&conn, &t, &o, &res, &err);
        check(r == -ENOENT && strstr(err.msg, "not found"), "a missing Pod: 404 -> -ENOENT", &err);
        bad.token = "wrong-token";
        t.pod = POD;
        err = (struct b4_error){ 0 };
        r = kube_exec_run(&bad, &t, &o, &res, &err);
        check(r == -EPERM, "a wrong token: 401 -> -EPERM", &err);
        /* sessions of the fake's CA are cached by now: one resumed here would skip the
         * certificate check, so this also proves sessions are kept apart per CA */
        bad = conn;
        bad.ca_file = "/etc/ssl/certs/ca-certificates.crt";
        bad.ca_blob = NULL;
        err = (struct b4_error){ 0 };
        r = kube_exec_run(&bad, &t, &o, &res, &err);
        check(r == -EIO,
              "a server certificate from another CA is refused (TLS), no session "
              "of the right CA resumed",
              &err);
}

/* POST @json to the fake's control API (FAKE_URL, FAKE_ADMIN, FAKE_CA from tests/kube/lib.sh);
 * the answer into *@ret (heap) when given, else to stderr. */
static int ctl_answer(const char *path, const char *json, char **ret)
{
        const char *url = getenv("FAKE_URL"), *admin = getenv("FAKE_ADMIN"); /* checksrc: allow */
        const char *ca = getenv("FAKE_CA");                                  /* checksrc: allow */
        char full[512], auth[512];
        struct curl_slist *h = NULL;
        CURL *c = curl_easy_init();
        size_t len = 0;
        FILE *out = ret ? open_memstream(ret, &len) : stderr;
        long code = 0;
        int r = -1;

        if (!c || !url || !admin || !ca || !out)
                return -1;
        (void)snprintf(full, sizeof(full), "%s/_fake%s", url, path);
        (void)snprintf(auth, sizeof(auth), "Authorization: Bearer %s", admin);
        h = curl_slist_append(curl_slist_append(NULL, auth), "Content-Type: application/json");
        (void)curl_easy_setopt(c, CURLOPT_URL, full);
        (void)curl_easy_setopt(c, CURLOPT_CAINFO, ca);
        (void)curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
        (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
        (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
        CURLcode res = curl_easy_perform(c);
        if (res == CURLE_OK && curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
            code == 200)
                r = 0;
        else
                printf("# control %s: %s, HTTP %ld\n", path, curl_easy_strerror(res), code);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        if (ret)
                (void)fclose(out);
        return r;
}

static int ctl(const char *path, const char *json)
{
        return ctl_answer(path, json, NULL);
}

/* The fake's counter @name since the last reset, and a reset. */
static int64_t counter_reset(const char *name)
{
        cleanup_free char *json = NULL;
        cleanup_(jv_unrefp) struct jv *v = NULL;

        if (ctl_answer("/counters/reset", "{}", &json) < 0 || !json ||
            jv_parse(json, strlen(json), &v, NULL) < 0)
                return -1;
        return jv_integer(jv_object_get(v, name));
}

/* TLS sessions: the exec connections resume the session the REST requests started (the
 * process's libcurl share, src/lib/http), and each other's. */
static void resumption(void)
{
        struct kube_exec_result res = { 0 };
        struct b4_error err = { 0 };
        int r;

        (void)counter_reset("connections");
        r = run(ARGV("true"), NULL, 0, false, &res, &err);
        kube_exec_result_clear(&res);
        r = r < 0 ? r : run(ARGV("true"), NULL, 0, false, &res, &err);
        kube_exec_result_clear(&res);
        check(r == 0 && counter_reset("tlsResumed") == 2,
              "the first exec resumes the REST requests' TLS session, the second too", &err);
}

static void faults(void)
{
        struct kube_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct agent_conn *c = NULL;
        struct b4_stat st = { 0 };
        uint64_t t0;
        int r;

        r = ctl("/faults", "{\"code\":429,\"count\":1,\"retryAfter\":1,\"path\":\"/exec\"}");
        r = r < 0 ? r : run(ARGV("true"), NULL, 0, false, &res, &err);
        check(r == -EBUSY && strstr(err.msg, "429"), "a 429 on the upgrade: -EBUSY, named", &err);
        r = ctl("/faults", "{\"drop\":true,\"count\":1,\"path\":\"/exec\"}");
        r = r < 0 ? r : run(ARGV("true"), NULL, 0, false, &res, &err);
        check(r == -ECONNRESET, "a connection dropped during the upgrade: -ECONNRESET", &err);
        r = ctl("/exec/drop", "{\"count\":1,\"afterMs\":200}");
        t0 = now_msec();
        r = r < 0 ? r : run(ARGV("sleep", "10"), NULL, 0, false, &res, &err);
        check(r == -ECONNRESET && now_msec() - t0 < 5000,
              "an exec stream cut mid-way: -ECONNRESET, at once", &err);
        kube_exec_result_clear(&res);
        /* the agent's stream cut: its calls fail -ENOTCONN (core's recover replaces it) */
        r = ctl("/exec/drop", "{\"count\":1,\"afterMs\":300}");
        r = r < 0 ? r : agent_open(&c, &err);
        if (r == 0) {
                usleep(600 * 1000);
                r = agent_lstat(c, "/workspace", &st, &err);
                b4_stat_clear(&st);
        }
        check(r == -ENOTCONN && c && !agent_conn_alive(c),
              "the agent's exec stream cut: -ENOTCONN, the connection dead", &err);
        agent_conn_free(c);
}

/* The kubeconfig's client-certificate context: no token, TLS client authentication (the
 * certificate and key as files, then as PEM bytes). */
static void client_cert(const char *kubeconfig)
{
        struct kube_options opts = { .kubeconfig = kubeconfig, .context = "fake-cert" };
        struct kube_config cfg = { 0 };
        struct kube_exec_result res = { 0 };
        struct b4_error err = { 0 };
        struct kube_exec_target t = { .namespace_name = NS, .pod = POD, .argv = ARGV("id", "-u") };
        struct kube_exec_run_opts o = { .cancel_fd = -EBADF };
        struct kube_conn_opts cc;
        char *cert = NULL, *key = NULL;
        size_t cert_len = 0, key_len = 0;
        int r;

        r = kube_config_resolve(&opts, &cfg, &err);
        check(r == 0 && !cfg.token && !cfg.token_file && (cfg.cert_file || cfg.cert_pem),
              "the client-certificate context resolves without a token", &err);
        if (r < 0)
                return;
        kube_exec_conn_opts(&cfg, NULL, &cc);
        r = kube_exec_run(&cc, &t, &o, &res, &err);
        check(r == 0 && res.exit_code == 0 && res.out && !strcmp(res.out, "1000\n"),
              "exec authenticated by the client certificate", &err);
        kube_exec_result_clear(&res);
        /* the same pair as PEM bytes */
        if (cfg.cert_file && cfg.key_file && read_file(cfg.cert_file, &cert, &cert_len) == 0 &&
            read_file(cfg.key_file, &key, &key_len) == 0) {
                cc.cert_file = cc.key_file = NULL;
                cc.cert_blob = cert;
                cc.cert_blob_len = cert_len;
                cc.key_blob = key;
                cc.key_blob_len = key_len;
                err = (struct b4_error){ 0 };
                r = kube_exec_run(&cc, &t, &o, &res, &err);
                check(r == 0 && res.exit_code == 0, "the certificate and key as PEM bytes", &err);
                kube_exec_result_clear(&res);
        }
        free(cert);
        free(key);
        /* no credentials at all */
        cc.cert_blob = cc.key_blob = NULL;
        err = (struct b4_error){ 0 };
        r = kube_exec_run(&cc, &t, &o, &res, &err);
        check(r == -EPERM, "no credentials: 401 -> -EPERM", &err);
        kube_config_release(&cfg);
}

static int read_file(const char *path, char **ret, size_t *ret_len)
{
        cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        char *buf;

        if (fd < 0 || fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1)))
                return -1;
        if (read(fd, buf, (size_t)st.st_size) != st.st_size) {
                free(buf);
                return -1;
        }
        *ret = buf;
        *ret_len = (size_t)st.st_size;
        return 0;
}

/* Copy the agent into the Pod's /b4 (one exec, the binary on stdin). */
static int bootstrap(const char *agent, struct b4_error *err)
{
        struct kube_exec_result res = { 0 };
        cleanup_free char *bin = NULL;
        size_t len = 0;
        int r;

        if (read_file(agent, &bin, &len) < 0)
                return b4_error_set(err, -ENOENT, "cannot read %s", agent);
        r = run(ARGV("sh", "-c",
                     "cat >/b4/agent.$$ && chmod 0555 /b4/agent.$$ && "
                     "mv -f /b4/agent.$$ /b4/b4box-agent"),
                bin, len, false, &res, err);
        if (r == 0 && res.exit_code != 0)
                r = b4_error_set(err, -EIO, "bootstrap exit %d: %s", res.exit_code,
                                 res.errout ? res.errout : "");
        kube_exec_result_clear(&res);
        return r;
}

static int agent_open(struct agent_conn **ret, struct b4_error *err)
{
        struct kube_exec_target t = { .namespace_name = NS,
                                      .pod = POD,
                                      .container = "sandbox",
                                      .argv = ARGV("/b4/b4box-agent") };
        struct agent_transport tr;
        int r = kube_exec_transport(&conn, &t, -EBADF, &tr, err);

        return r < 0 ? r : agent_conn_open(&tr, NULL, ret, err);
}

static void agent_session(const char *agent)
{
        struct agent_conn *c = NULL;
        struct b4_error err = { 0 };
        struct b4_exec_result res = { 0 };
        char *data = NULL;
        size_t len = 0;
        int r;

        r = bootstrap(agent, &err);
        check(r == 0, "b4box-agent copied into the Pod with one exec (stdin, v5 close)", &err);
        r = r < 0 ? r : agent_open(&c, &err);
        check(r == 0, "agent handshake over one exec stream", &err);
        if (r < 0)
                return;
        r = agent_write_file(c, "/workspace/over-exec.txt", 0, "agent data", 10, &err);
        check(r == 0, "agent write", &err);
        r = agent_read_file(c, "/workspace/over-exec.txt", 0, 1024, &data, &len, &err);
        check(r == 0 && len == 10 && !memcmp(data, "agent data", 10), "agent read", &err);
        free(data);
        r = agent_exec(c,
                       &(struct agent_exec_req){ .command = "id -u; cat over-exec.txt; exit 4",
                                                 .cwd = "/workspace",
                                                 .output_cap = 4096 },
                       &res, &err);
        check(r == 0 && res.exit_code == 4 && res.out && !strcmp(res.out, "1000\nagent data"),
              "agent command: the Pod's user, the file, exit 4", &err);
        b4_exec_result_clear(&res);
        agent_conn_free(c);
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p)
{
        qsort(v, n, sizeof(*v), cmp_u64); /* checksrc: allow (tests) */
        return v[(size_t)(p * (double)(n - 1))];
}

static double cpu_thread(void);

/* Exec setup: connect + TLS + upgrade + the first message, for `true`; *ret_upgrade: the
 * part up to the 101; *ret_cpu: this thread's CPU seconds for it (the close not counted). */
static uint64_t setup_once(uint64_t *ret_upgrade, double *ret_cpu)
{
        static const char *const protos[] = { KUBE_EXEC_V5, KUBE_EXEC_V4, NULL };
        struct kube_exec_target t = { .namespace_name = NS, .pod = POD, .argv = ARGV("true") };
        cleanup_free char *path = NULL;
        struct kube_ws *ws = NULL;
        struct kube_ws_chunk ch;
        uint8_t buf[4096];
        double cpu0 = cpu_thread();
        uint64_t t0 = now_usec(), dt;

        if (kube_exec_path(&t, false, &path) < 0 ||
            kube_ws_connect(&conn,
                            &(struct kube_ws_opts){
                                    .path = path, .protocols = protos, .cancel_fd = -EBADF },
                            &ws, NULL) < 0 ||
            !(*ret_upgrade = now_usec() - t0) ||
            kube_ws_read(ws, buf, sizeof(buf), now_msec() + 10000, -EBADF, &ch, NULL) <= 0)
                exit(1);
        dt = now_usec() - t0;
        *ret_cpu += cpu_thread() - cpu0;
        kube_ws_free(ws);
        return dt;
}

/* CPU seconds (user + system) of this process, and of the fake (FAKE_PID; -1 unknown). */
static double cpu_self(void)
{
        struct rusage ru;

        (void)getrusage(RUSAGE_SELF, &ru);
        return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double cpu_thread(void)
{
        struct rusage ru;

        (void)getrusage(RUSAGE_THREAD, &ru);
        return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double cpu_fake(void)
{
        const char *pid = getenv("FAKE_PID"); /* checksrc: allow (tests) */
        char path[64], buf[4096], *p;
        unsigned long ut = 0, st = 0;
        FILE *f;
        size_t n;

        if (!pid)
                return -1;
        (void)snprintf(path, sizeof(path), "/proc/%s/stat", pid);
        if (!(f = fopen(path, "re")))
                return -1;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        (void)fclose(f);
        buf[n] = '\0';
        p = strrchr(buf, ')'); /* then: state ppid ... utime(14) stime(15) */
        if (!p ||
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
                return -1;
        return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void bench(const char *agent, int n)
{
        uint64_t *v = calloc((size_t)n, sizeof(*v)), *u = calloc((size_t)n, sizeof(*u));
        struct agent_conn *c = NULL;
        struct b4_stat st = { 0 };
        struct b4_error err = { 0 };

        if (!v || !u || bootstrap(agent, &err) < 0 || agent_open(&c, &err) < 0) {
                fprintf(stderr, "bench: %s\n", err.msg);
                exit(1);
        }
        double self0 = cpu_self(), fake0 = cpu_fake(), path_cpu = 0;
        (void)counter_reset("connections");
        for (int i = 0; i < n; i++)
                v[i] = setup_once(&u[i], &path_cpu);
        double self1 = cpu_self(), fake1 = cpu_fake();
        int64_t resumed = counter_reset("tlsResumed");
        printf("exec setup (TLS + upgrade + first message), %d runs: p50 %.2f ms, p90 %.2f ms\n", n,
               pct(v, (size_t)n, 0.5) / 1000.0, pct(v, (size_t)n, 0.9) / 1000.0);
        printf("  CPU per exec setup: client %.2f ms (%.2f ms of it until the first message), "
               "fake %.2f ms (running `true` included; TLS sessions resumed: %lld of %d)\n",
               (self1 - self0) * 1000.0 / n, path_cpu * 1000.0 / n,
               fake0 < 0 ? -1.0 : (fake1 - fake0) * 1000.0 / n, (long long)resumed, n);
        printf("  of which TLS + upgrade (101 received): p50 %.2f ms, p90 %.2f ms\n",
               pct(u, (size_t)n, 0.5) / 1000.0, pct(u, (size_t)n, 0.9) / 1000.0);
        for (int i = 0; i < n; i++) {
                uint64_t t0 = now_usec();

                if (agent_lstat(c, "/workspace", &st, &err) < 0)
                        exit(1);
                b4_stat_clear(&st);
                v[i] = now_usec() - t0;
        }
        printf("agent lstat over the exec, %d runs: p50 %.3f ms, p90 %.3f ms\n", n,
               pct(v, (size_t)n, 0.5) / 1000.0, pct(v, (size_t)n, 0.9) / 1000.0);
        agent_conn_free(c);
        free(v);
        free(u);
}

int main(int argc, char **argv)
{
        struct kube_options opts = { 0 };
        struct kube_config cfg = { 0 };
        struct kube_client *k = NULL;
        struct b4_error err = { 0 };
        cleanup_free char *token = NULL;
        int r;

        if (argc < 3)
                return 2;
        opts.kubeconfig = argv[1];
        r = kube_config_resolve(&opts, &cfg, &err);
        if (r >= 0)
                r = kube_client_new(&cfg, &k, &err);
        if (r >= 0)
                r = kube_client_token(k, &token, &err);
        if (r >= 0) {
                r = create(k, "persistentvolumeclaims", pvc_json, &err);
                if (r >= 0 || r == -EEXIST)
                        r = create(k, "pods", pod_json, &err);
                if (r == -EEXIST)
                        r = 0;
        }
        if (r >= 0)
                r = wait_running(k, &err);
        if (r < 0) {
                printf("1..0 # SKIP setup failed: %s\n", err.msg);
                return 1;
        }
        kube_exec_conn_opts(&cfg, token, &conn);
        if (argc == 5 && !strcmp(argv[3], "--bench")) {
                bench(argv[2], atoi(argv[4])); /* checksrc: allow (tests) */
        } else {
                resumption();
                one_shots();
                refusals();
                client_cert(argv[1]);
                agent_session(argv[2]);
                faults();
                printf("1..%d\n", tap_n);
        }
        kube_client_free(k);
        kube_config_release(&cfg);
        return tap_failed ? 1 : 0;
}
