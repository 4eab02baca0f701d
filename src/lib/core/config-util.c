/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the b4box.json loader: refusal collection, JavaScript-style value quoting for
 * "(got: ...)", unknown-key checks and typed getters. Every getter refuses with a message
 * naming the key's path and never stops the walk.
 */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/macro.h"
#include "base/strv.h"
#include "config-internal.h"

int cfg_fail(struct cfg *c, int r)
{
        if (c->r == 0)
                c->r = r;
        return r;
}

void cfg_refuse(struct cfg *c, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        int r;

        if (c->n_errors >= B4_CONFIG_MAX_ERRORS) {
                c->n_dropped++;
                return;
        }
        va_start(ap, fmt);
        r = b4_vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0 || strv_consume(&c->errors, s) < 0) {
                cfg_fail(c, -ENOMEM);
                return;
        }
        c->n_errors++;
}

static char *got_slot(struct cfg *c)
{
        char *buf = c->got[c->got_next];

        c->got_next = (c->got_next + 1) % CFG_GOT_SLOTS;
        return buf;
}

static void zeros(char *buf, int n)
{
        int i;

        for (i = 0; i < n && i < 24; i++)
                buf[i] = '0';
        buf[i] = 0;
}

/* ECMAScript Number::toString for a finite non-zero double: shortest round-trip digits. */
static void js_number(double d, char *buf, size_t size)
{
        char digits[32], tmp[40], z[32];
        const char *sign = d < 0 ? "-" : "";
        int p, k = 0, n;

        for (p = 1; p <= 17; p++) {
                snprintf(tmp, sizeof(tmp), "%.*e", p - 1, fabs(d));
                if (strtod(tmp, NULL) == fabs(d))
                        break;
        }
        for (const char *s = tmp; *s && *s != 'e'; s++)
                if (*s >= '0' && *s <= '9' && k < (int)sizeof(digits) - 1)
                        digits[k++] = *s;
        digits[k] = 0;
        n = (int)strtol(strchr(tmp, 'e') + 1, NULL, 10) + 1;
        if (k <= n && n <= 21) {
                zeros(z, n - k);
                snprintf(buf, size, "%s%s%s", sign, digits, z);
        } else if (0 < n && n <= 21) {
                snprintf(buf, size, "%s%.*s.%s", sign, n, digits, digits + n);
        } else if (-6 < n && n <= 0) {
                zeros(z, -n);
                snprintf(buf, size, "%s0.%s%s", sign, z, digits);
        } else {
                snprintf(buf, size, "%s%c%s%se%c%d", sign, digits[0], k > 1 ? "." : "", digits + 1,
                         n - 1 >= 0 ? '+' : '-', abs(n - 1));
        }
}

const char *cfg_got(struct cfg *c, const struct jv *v)
{
        char *buf = got_slot(c);
        cleanup_free char *s = NULL;

        if (!v) {
                snprintf(buf, CFG_GOT_MAX, "undefined");
                return buf;
        }
        if (jv_typeof(v) == JV_INTEGER) {
                snprintf(buf, CFG_GOT_MAX, "%lld", (long long)jv_integer(v));
                return buf;
        }
        if (jv_typeof(v) == JV_REAL && jv_number(v) == 0) {
                snprintf(buf, CFG_GOT_MAX, "0");
                return buf;
        }
        if (jv_typeof(v) == JV_REAL) {
                js_number(jv_number(v), buf, CFG_GOT_MAX);
                return buf;
        }
        if (jv_dump(v, 0, &s) < 0) {
                cfg_fail(c, -ENOMEM);
                snprintf(buf, CFG_GOT_MAX, "?");
                return buf;
        }
        if (strlen(s) >= CFG_GOT_MAX)
                snprintf(buf, CFG_GOT_MAX + 8, "%.*s...", CFG_GOT_MAX - 4, s);
        else
                snprintf(buf, CFG_GOT_MAX, "%s", s);
        return buf;
}

const char *cfg_key(struct cfg *c, const char *key)
{
        char *buf = got_slot(c);
        cleanup_free char *q = NULL;
        bool plain = strlen(key) < 64 && *key;

        for (const char *s = key; plain && *s; s++)
                if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '"')
                        plain = false;
        if (plain) {
                snprintf(buf, CFG_GOT_MAX, "%s", key);
                return buf;
        }
        if (jv_quote(key, &q) < 0) {
                snprintf(buf, CFG_GOT_MAX, "\"?\"");
                return buf;
        }
        if (strlen(q) >= 64)
                snprintf(buf, CFG_GOT_MAX, "%.60s...", q);
        else
                snprintf(buf, CFG_GOT_MAX, "%s", q);
        return buf;
}

char *cfg_path(char *buf, const char *base, const char *key)
{
        snprintf(buf, CFG_PATH_MAX, "%s%s%s", base, *base ? "." : "", key);
        return buf;
}

char *cfg_index(char *buf, const char *base, size_t i)
{
        snprintf(buf, CFG_PATH_MAX, "%s[%zu]", base, i);
        return buf;
}

static int join_known(const char *const *known, char **ret)
{
        size_t n = 1;
        char *s;

        for (const char *const *k = known; *k; k++)
                n += strlen(*k) + 2;
        s = b4_malloc(n);
        if (!s)
                return -ENOMEM;
        s[0] = 0;
        for (const char *const *k = known; *k; k++) {
                if (k != known)
                        strncat(s, ", ", n - strlen(s) - 1);
                strncat(s, *k, n - strlen(s) - 1);
        }
        *ret = s;
        return 0;
}

static bool is_known(const char *key, const char *const *known)
{
        for (const char *const *k = known; *k; k++)
                if (strcmp(*k, key) == 0)
                        return true;
        return false;
}

bool cfg_known_keys(struct cfg *c,
                    const struct jv *o,
                    const char *path,
                    const char *what,
                    const char *const *known)
{
        cleanup_free char *list = NULL;
        bool ok = true;

        for (void *it = jv_object_iter(o); it; it = jv_object_next(o, it)) {
                const char *key = jv_iter_key(it);

                if (is_known(key, known))
                        continue;
                ok = false;
                if (!list && join_known(known, &list) < 0) {
                        cfg_fail(c, -ENOMEM);
                        return false;
                }
                cfg_refuse(c, "b4box.json %s%s%s is not %s (known: %s).", path, *path ? "." : "",
                           cfg_key(c, key), what, list);
        }
        return ok;
}

bool cfg_uint_range(struct cfg *c,
                    const struct jv *v,
                    const char *path,
                    uint64_t min,
                    uint64_t max,
                    uint64_t *ret)
{
        if (!jv_is_safe_integer(v) || jv_integer(v) < 0 || (uint64_t)jv_integer(v) < min ||
            (uint64_t)jv_integer(v) > max) {
                cfg_refuse(c, "b4box.json %s must be an integer from %llu to %llu (got: %s).", path,
                           (unsigned long long)min, (unsigned long long)max, cfg_got(c, v));
                return false;
        }
        *ret = (uint64_t)jv_integer(v);
        return true;
}

bool cfg_positive_int(
        struct cfg *c, const struct jv *v, const char *path, uint64_t max, uint64_t *ret)
{
        if (!jv_is_safe_integer(v) || jv_integer(v) < 1) {
                cfg_refuse(c, "b4box.json %s must be a positive integer (got: %s).", path,
                           cfg_got(c, v));
                return false;
        }
        return cfg_uint_range(c, v, path, 1, max, ret);
}

bool cfg_positive_number(struct cfg *c, const struct jv *v, const char *path, double *ret)
{
        if (!jv_is_number(v) || !(jv_number(v) > 0) || !isfinite(jv_number(v))) {
                cfg_refuse(c, "b4box.json %s must be a positive number (got: %s).", path,
                           cfg_got(c, v));
                return false;
        }
        *ret = jv_number(v);
        return true;
}

bool cfg_bool(struct cfg *c, const struct jv *v, const char *path, bool *ret)
{
        if (!jv_is_bool(v)) {
                cfg_refuse(c, "b4box.json %s must be true or false (got: %s).", path,
                           cfg_got(c, v));
                return false;
        }
        *ret = jv_is_true(v);
        return true;
}

bool cfg_string(struct cfg *c, const struct jv *v, const char *path, size_t max, char **ret)
{
        *ret = NULL;
        if (!jv_is_string(v) || jv_string_length(v) == 0 ||
            strlen(jv_string(v)) != jv_string_length(v)) {
                cfg_refuse(c, "b4box.json %s must be a non-empty string (got: %s).", path,
                           cfg_got(c, v));
                return false;
        }
        if (jv_string_length(v) > max) {
                cfg_refuse(c, "b4box.json %s must be at most %zu bytes long.", path, max);
                return false;
        }
        *ret = b4_strdup(jv_string(v));
        if (!*ret)
                cfg_fail(c, -ENOMEM);
        return *ret != NULL;
}

char *cfg_abs_path(struct cfg *c, const char *s)
{
        char *r = NULL;

        if (s[0] == '/' || !c->base_dir)
                r = b4_strdup(s);
        else if (b4_asprintf(&r, "%s/%s", c->base_dir, s) < 0)
                r = NULL;
        if (!r)
                cfg_fail(c, -ENOMEM);
        return r;
}

static bool is_device_name(const char *seg, size_t len)
{
        static const char *const dev[] = { "CON", "PRN", "AUX", "NUL" };
        size_t stem = 0;

        while (stem < len && seg[stem] != '.')
                stem++;
        for (size_t i = 0; i < ELEMENTSOF(dev); i++)
                if (stem == 3 && strncasecmp(seg, dev[i], 3) == 0)
                        return true;
        return stem == 4 && (strncasecmp(seg, "COM", 3) == 0 || strncasecmp(seg, "LPT", 3) == 0) &&
               seg[3] >= '1' && seg[3] <= '9';
}

static bool segment_ok(const char *seg, size_t len)
{
        if (len == 0 || len > 255)
                return false;
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
                return false;
        if (seg[0] == ' ' || seg[len - 1] == ' ' || seg[len - 1] == '.')
                return false;
        for (size_t i = 0; i + 1 < len; i++)
                if (seg[i] == ' ' && seg[i + 1] == ' ')
                        return false;
        return !is_device_name(seg, len);
}

bool cfg_is_portable_path(const char *s, size_t len)
{
        size_t start = 0;

        if (len == 0 || len > CFG_MAX_PATH || strlen(s) != len)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._ /-",
                            s[i]))
                        return false;
        for (size_t i = 0; i <= len; i++) {
                if (i < len && s[i] != '/')
                        continue;
                if (!segment_ok(s + start, i - start))
                        return false;
                start = i + 1;
        }
        return true;
}
