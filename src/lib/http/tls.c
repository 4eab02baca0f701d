/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process's TLS state for its libcurl users (http.h): one share of TLS sessions and DNS
 * answers, and the CA stores parsed once (http_curl_trust()). Both live as long as the
 * process; every function here is thread-safe.
 */

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "http/http.h"

#define CA_CACHE_MAX 8u
#define CA_PEM_MAX   (1024u * 1024)

static pthread_once_t share_once = PTHREAD_ONCE_INIT;
/* The process's TLS sessions and DNS answers (http_curl_share()); lives as long as it. */
static CURLSH *share;
static pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];

static void on_share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *userdata)
{
        (void)pthread_mutex_lock(&share_lock[data]);
}

static void on_share_unlock(CURL *h, curl_lock_data data, void *userdata)
{
        (void)pthread_mutex_unlock(&share_lock[data]);
}

static void share_init(void)
{
        if (curl_global_init(CURL_GLOBAL_SSL) != CURLE_OK)
                return;
        for (size_t i = 0; i < ELEMENTSOF(share_lock); i++)
                (void)pthread_mutex_init(&share_lock[i], NULL);
        share = curl_share_init();
        if (share &&
            (curl_share_setopt(share, CURLSHOPT_LOCKFUNC, on_share_lock) != CURLSHE_OK ||
             curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, on_share_unlock) != CURLSHE_OK ||
             curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK ||
             curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK)) {
                (void)curl_share_cleanup(share);
                share = NULL; /* full handshakes then */
        }
}

/*
 * Parsed CA stores by the SHA-256 of their PEM: libcurl parses its CA file or bytes again
 * for every connection (about a quarter of an exec setup's CPU in OpenSSL 3's decoders);
 * http_curl_trust() parses each CA once per process. At most CA_CACHE_MAX, never evicted
 * (a connection being set up may hold a store): past them libcurl parses, as before.
 */
static pthread_mutex_t ca_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
        unsigned char sum[SHA256_DIGEST_LENGTH];
        X509_STORE *store;
} ca_cache[CA_CACHE_MAX];

static size_t ca_n;

/* The certificates (and CRLs) of @pem in a new store, flagged as libcurl flags its own. */
static X509_STORE *ca_parse(const void *pem, size_t len)
{
        BIO *bio = BIO_new_mem_buf(pem, (int)len);
        STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL) : NULL;
        X509_STORE *store = infos ? X509_STORE_new() : NULL;
        int certs = 0, ok = store != NULL;

        for (int i = 0; ok && i < sk_X509_INFO_num(infos); i++) {
                X509_INFO *inf = sk_X509_INFO_value(infos, i);
                if (inf->x509 && (ok = X509_STORE_add_cert(store, inf->x509)))
                        certs++;
                if (ok && inf->crl)
                        ok = X509_STORE_add_crl(store, inf->crl);
        }
        if (ok && certs)
                ok = X509_STORE_set_flags(store,
                                          X509_V_FLAG_TRUSTED_FIRST | X509_V_FLAG_PARTIAL_CHAIN);
        sk_X509_INFO_pop_free(infos, X509_INFO_free);
        BIO_free(bio);
        if (ok && certs)
                return store;
        X509_STORE_free(store);
        return NULL;
}

/* The cached store of @pem (NULL: not PEM certificates, the cache full, OOM). */
static X509_STORE *ca_store(const void *pem, size_t len, unsigned char sum[SHA256_DIGEST_LENGTH])
{
        X509_STORE *store = NULL;

        (void)SHA256(pem, len, sum);
        (void)pthread_mutex_lock(&ca_lock);
        for (size_t i = 0; !store && i < ca_n; i++)
                if (memcmp(ca_cache[i].sum, sum, SHA256_DIGEST_LENGTH) == 0)
                        store = ca_cache[i].store;
        if (!store && ca_n < CA_CACHE_MAX && (store = ca_parse(pem, len))) {
                memcpy(ca_cache[ca_n].sum, sum, SHA256_DIGEST_LENGTH);
                ca_cache[ca_n++].store = store;
        }
        (void)pthread_mutex_unlock(&ca_lock);
        return store;
}

static CURLcode on_ssl_ctx(CURL *e, void *ssl_ctx, void *store)
{
        (void)e;
        SSL_CTX_set1_cert_store(ssl_ctx, store); /* takes a reference */
        return CURLE_OK;
}

/* @file's bytes (at most CA_PEM_MAX) into *ret. Return: 0, -errno. */
static int slurp(const char *file, char **ret, size_t *ret_len)
{
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        size_t len = 0;
        char *buf;
        ssize_t k = 1;

        if (fd < 0)
                return -errno;
        buf = b4_malloc(CA_PEM_MAX);
        while (buf && len < CA_PEM_MAX && (k = read(fd, buf + len, CA_PEM_MAX - len)) > 0)
                len += (size_t)k;
        (void)close(fd);
        if (!buf || k < 0 || len == CA_PEM_MAX) {
                free(buf);
                return buf ? -EIO : -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

int http_curl_trust(void *easy, const char *file, const void *pem, size_t len)
{
        unsigned char sum[SHA256_DIGEST_LENGTH];
        char marker[sizeof("/nonexistent/b4box-ca-") + 2 * SHA256_DIGEST_LENGTH];
        cleanup_free char *bytes = NULL;
        X509_STORE *store;
        int r;

        if (!!file == !!pem)
                return -EINVAL;
        if (file && (r = slurp(file, &bytes, &len)) < 0)
                return r;
        store = ca_store(file ? bytes : pem, len, sum);
        if (!store)
                return -ENOENT;
        r = snprintf(marker, sizeof(marker), "/nonexistent/b4box-ca-");
        for (size_t i = 0; i < SHA256_DIGEST_LENGTH; i++)
                r += snprintf(marker + r, sizeof(marker) - (size_t)r, "%02x", sum[i]);
        /* libcurl loads no CA itself (no file, bytes or directory of its own); its session
         * cache keys on the CA path, so the marker naming this CA's digest keeps sessions of
         * different CAs apart; the store replaces libcurl's (empty) one */
        if (curl_easy_setopt(easy, CURLOPT_CAINFO, NULL) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_CAPATH, marker) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_SSL_CTX_DATA, store) != CURLE_OK) {
                (void)curl_easy_setopt(easy, CURLOPT_SSL_CTX_FUNCTION, NULL);
                return -EOPNOTSUPP; /* a TLS backend without the callback */
        }
        return 0;
}

void *http_curl_share(void)
{
        (void)pthread_once(&share_once, share_init);
        return share;
}
