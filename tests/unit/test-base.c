/* SPDX-License-Identifier: Apache-2.0 */
/* Base layer: strbuf caps, strv, integer parsing, UTF-8, errors, cancellation, SHA-256. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "b4box/cancel.h"

#include "b4-test.h"
#include "base/alloc.h"
#include "base/fd-util.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/strbuf.h"
#include "base/strv.h"
#include "base/time-util.h"
#include "base/utf8.h"

static void test_strbuf_cap(void **state)
{
        struct strbuf sb;
        char *s = NULL;
        size_t len = 0;

        strbuf_init(&sb, 8);
        assert_int_equal(strbuf_adds(&sb, "abcd"), 0);
        assert_int_equal(strbuf_addf(&sb, "%d", 1234), 0);
        assert_int_equal(strbuf_addc(&sb, 'x'), -E2BIG);
        assert_int_equal(sb.len, 8);
        assert_int_equal(strbuf_detach(&sb, &s, &len), 0);
        assert_string_equal(s, "abcd1234");
        assert_int_equal(len, 8);
        free(s);
}

static void test_strv_sort_contains(void **state)
{
        cleanup_strv char **l = NULL;

        assert_int_equal(strv_extend(&l, "b"), 0);
        assert_int_equal(strv_extend(&l, "B"), 0);
        assert_int_equal(strv_extend(&l, "a"), 0);
        strv_sort(l);
        assert_string_equal(l[0], "B");
        assert_string_equal(l[1], "a");
        assert_string_equal(l[2], "b");
        assert_true(strv_contains(l, "a"));
        assert_false(strv_contains(l, "c"));
        assert_int_equal(strv_length(l), 3);
}

static void test_safe_ato(void **state)
{
        uint64_t u = 0;
        int i = 0;

        assert_int_equal(safe_atou64("42", &u), 0);
        assert_int_equal(u, 42);
        assert_int_equal(safe_atou64("-1", &u), -EINVAL);
        assert_int_equal(safe_atou64("1x", &u), -EINVAL);
        assert_int_equal(safe_atou64("", &u), -EINVAL);
        assert_int_equal(safe_atou64("99999999999999999999999", &u), -ERANGE);
        assert_int_equal(safe_atoi("-7", &i), 0);
        assert_int_equal(i, -7);
        assert_int_equal(safe_atoi("4294967296", &i), -ERANGE);
}

static void test_utf8_strict(void **state)
{
        assert_true(utf8_is_valid("h\xc3\xa9llo", 6));
        assert_true(utf8_is_valid("\xf0\x9f\x98\x80", 4));
        assert_false(utf8_is_valid("\xc0\xaf", 2));         /* overlong */
        assert_false(utf8_is_valid("\xed\xa0\x80", 3));     /* surrogate */
        assert_false(utf8_is_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
        assert_false(utf8_is_valid("\xe2\x82", 2));         /* truncated */
        assert_false(utf8_is_valid("\xff", 1));
}

static void test_utf8_js_length(void **state)
{
        assert_int_equal(utf8_js_length(""), 0);
        assert_int_equal(utf8_js_length("abc"), 3);
        assert_int_equal(utf8_js_length("h\xc3\xa9"), 2);         /* U+00E9: one unit */
        assert_int_equal(utf8_js_length("\xe2\x82\xac"), 1);      /* U+20AC: one unit */
        assert_int_equal(utf8_js_length("a\xf0\x9f\x98\x80"), 3); /* U+1F600: a surrogate pair */
}

static void test_error_wrap(void **state)
{
        struct b4_error err = { 0 };

        assert_int_equal(b4_error_set(&err, -ENOENT, "open '%s'", "x"), -ENOENT);
        assert_int_equal(b4_error_wrap(&err, -EIO, "workspace"), -ENOENT);
        assert_string_equal(err.msg, "workspace: open 'x'");
        assert_int_equal(b4_error_set_code(&err, -EIO, B4_CODE_SANDBOX_UNAVAILABLE, "gone"), -EIO);
        assert_string_equal(b4_code_name(err.code), "B4_E2001");
        assert_null(b4_code_name(B4_CODE_NONE));
        assert_int_equal(b4_error_set(NULL, -EPERM, "ignored"), -EPERM);
}

static void test_cancel_fd(void **state)
{
        struct b4_cancel *c = b4_cancel_new();
        struct pollfd p;

        assert_non_null(c);
        p = (struct pollfd){ .fd = b4_cancel_fd(c), .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);
        assert_false(b4_cancel_is_set(c));
        b4_cancel_fire(c);
        b4_cancel_fire(c);
        assert_true(b4_cancel_is_set(c));
        assert_int_equal(poll(&p, 1, 0), 1);
        assert_false(b4_cancel_is_set(NULL));
        b4_cancel_free(c);
}

static void test_sha256_vectors(void **state)
{
        char hex[SHA256_HEX_LEN + 1];
        struct sha256_ctx *c;

        sha256_hex("abc", 3, hex);
        assert_string_equal(hex,
                            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        c = sha256_new();
        assert_non_null(c);
        sha256_update(c, "a", 1);
        sha256_update(c, "bc", 2);
        sha256_final_hex(c, hex);
        assert_string_equal(hex,
                            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_read_full_fd_cap(void **state)
{
        int p[2];
        char *s = NULL;
        size_t len = 0;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write_all(p[1], "0123456789", 10), 0);
        close(p[1]);
        assert_int_equal(read_full_fd(p[0], 9, &s, &len), -EFBIG);
        close(p[0]);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(write_all(p[1], "0123456789", 10), 0);
        close(p[1]);
        assert_int_equal(read_full_fd(p[0], 10, &s, &len), 0);
        assert_int_equal(len, 10);
        assert_string_equal(s, "0123456789");
        free(s);
        close(p[0]);
}

static int count_cb(const char *key, void *value, void *ud)
{
        (*(int *)ud)++;
        return 0;
}

static void test_hashmap_grow_remove(void **state)
{
        struct hashmap *m = hashmap_new();
        char key[32];
        int seen = 0;

        assert_non_null(m);
        for (long i = 0; i < 1000; i++) {
                snprintf(key, sizeof(key), "k%ld", i);
                assert_int_equal(hashmap_put(m, key, (void *)(i + 1)), 0);
        }
        assert_int_equal(hashmap_size(m), 1000);
        assert_ptr_equal(hashmap_get(m, "k500"), (void *)501);
        assert_int_equal(hashmap_put(m, "k500", (void *)7), 0);
        assert_int_equal(hashmap_size(m), 1000);
        assert_ptr_equal(hashmap_remove(m, "k500"), (void *)7);
        assert_null(hashmap_get(m, "k500"));
        assert_null(hashmap_remove(m, "missing"));
        assert_int_equal(hashmap_foreach(m, count_cb, &seen), 0);
        assert_int_equal(seen, 999);
        hashmap_free(m);
}

struct waker {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool done;
};

static void *wake_main(void *arg)
{
        struct waker *w = arg;

        (void)pthread_mutex_lock(&w->lock);
        w->done = true;
        (void)pthread_cond_signal(&w->cond);
        (void)pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* The deadline is CLOCK_MONOTONIC whatever clock the cond was made with (default here). */
static void test_cond_wait_until_ms(void **state)
{
        struct waker w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        uint64_t deadline = now_msec() + 30;
        pthread_t t;
        int r = 0;

        (void)pthread_mutex_lock(&w.lock);
        assert_int_equal(cond_wait_until_ms(&w.cond, &w.lock, now_msec() - 1), -ETIMEDOUT);
        while (r == 0)
                r = cond_wait_until_ms(&w.cond, &w.lock, deadline);
        assert_int_equal(r, -ETIMEDOUT);
        assert_true(now_msec() >= deadline);
        assert_int_equal(pthread_create(&t, NULL, wake_main, &w), 0);
        r = 0;
        while (!w.done && r == 0)
                r = cond_wait_until_ms(&w.cond, &w.lock, now_msec() + 10000);
        assert_int_equal(r, 0);
        assert_true(w.done);
        (void)pthread_mutex_unlock(&w.lock);
        assert_int_equal(pthread_join(t, NULL), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strbuf_cap),
                cmocka_unit_test(test_strv_sort_contains),
                cmocka_unit_test(test_safe_ato),
                cmocka_unit_test(test_utf8_strict),
                cmocka_unit_test(test_utf8_js_length),
                cmocka_unit_test(test_error_wrap),
                cmocka_unit_test(test_cancel_fd),
                cmocka_unit_test(test_sha256_vectors),
                cmocka_unit_test(test_read_full_fd_cap),
                cmocka_unit_test(test_hashmap_grow_remove),
                cmocka_unit_test(test_cond_wait_until_ms),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
