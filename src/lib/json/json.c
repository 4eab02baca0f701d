/* SPDX-License-Identifier: Apache-2.0 */
/* The jansson wrapper. struct jv is jansson's json_t. */

#include "json.h"

#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/strbuf.h"
#include "base/utf8.h"

#define J(v)  ((json_t *)(v))
#define JC(v) ((const json_t *)(v))
#define V(j)  ((struct jv *)(j))

int jv_parse(const char *buf, size_t len, struct jv **ret, struct b4_error *err)
{
        json_error_t e;
        json_t *j =
                json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);

        if (!j)
                return b4_error_set(err, -EINVAL, "%s at line %d column %d", e.text, e.line,
                                    e.column);
        *ret = V(j);
        return 0;
}

struct jv *jv_ref(struct jv *v)
{
        return V(json_incref(J(v)));
}

struct jv *jv_unref(struct jv *v)
{
        json_decref(J(v));
        return NULL;
}

enum jv_type jv_typeof(const struct jv *v)
{
        switch (json_typeof(JC(v))) {
        case JSON_OBJECT:
                return JV_OBJECT;
        case JSON_ARRAY:
                return JV_ARRAY;
        case JSON_STRING:
                return JV_STRING;
        case JSON_INTEGER:
                return JV_INTEGER;
        case JSON_REAL:
                return JV_REAL;
        case JSON_TRUE:
                return JV_TRUE;
        case JSON_FALSE:
                return JV_FALSE;
        case JSON_NULL:
                break;
        }
        return JV_NULL;
}

const char *jv_type_name(const struct jv *v)
{
        static const char *const names[] = {
                [JV_OBJECT] = "object",  [JV_ARRAY] = "array", [JV_STRING] = "string",
                [JV_INTEGER] = "number", [JV_REAL] = "number", [JV_TRUE] = "boolean",
                [JV_FALSE] = "boolean",  [JV_NULL] = "null",
        };
        return v ? names[jv_typeof(v)] : "undefined";
}

bool jv_is_object(const struct jv *v)
{
        return v && json_is_object(JC(v));
}

bool jv_is_array(const struct jv *v)
{
        return v && json_is_array(JC(v));
}

bool jv_is_string(const struct jv *v)
{
        return v && json_is_string(JC(v));
}

bool jv_is_number(const struct jv *v)
{
        return v && json_is_number(JC(v));
}

bool jv_is_bool(const struct jv *v)
{
        return v && json_is_boolean(JC(v));
}

bool jv_is_null(const struct jv *v)
{
        return v && json_is_null(JC(v));
}

bool jv_is_true(const struct jv *v)
{
        return v && json_is_true(JC(v));
}

bool jv_is_safe_integer(const struct jv *v)
{
        const double limit = 9007199254740991.0;

        if (!v)
                return false;
        if (json_is_integer(JC(v))) {
                json_int_t i = json_integer_value(JC(v));
                return i >= -(json_int_t)limit && i <= (json_int_t)limit;
        }
        if (json_is_real(JC(v))) {
                double d = json_real_value(JC(v));
                return isfinite(d) && floor(d) == d && fabs(d) <= limit;
        }
        return false;
}

struct jv *jv_object_get(const struct jv *o, const char *key)
{
        return jv_is_object(o) ? V(json_object_get(JC(o), key)) : NULL;
}

size_t jv_object_size(const struct jv *o)
{
        return json_object_size(JC(o));
}

void *jv_object_iter(const struct jv *o)
{
        return jv_is_object(o) ? json_object_iter(J(o)) : NULL;
}

void *jv_object_next(const struct jv *o, void *it)
{
        return json_object_iter_next(J(o), it);
}

const char *jv_iter_key(void *it)
{
        return json_object_iter_key(it);
}

struct jv *jv_iter_value(void *it)
{
        return V(json_object_iter_value(it));
}

size_t jv_array_size(const struct jv *a)
{
        return json_array_size(JC(a));
}

struct jv *jv_array_get(const struct jv *a, size_t i)
{
        return V(json_array_get(JC(a), i));
}

const char *jv_string(const struct jv *v)
{
        return jv_is_string(v) ? json_string_value(JC(v)) : NULL;
}

size_t jv_string_length(const struct jv *v)
{
        return jv_is_string(v) ? json_string_length(JC(v)) : 0;
}

int64_t jv_integer(const struct jv *v)
{
        if (json_is_integer(JC(v)))
                return json_integer_value(JC(v));
        return (int64_t)json_real_value(JC(v));
}

double jv_number(const struct jv *v)
{
        return json_number_value(JC(v));
}

struct jv *jv_object_new(void)
{
        return V(json_object());
}

struct jv *jv_array_new(void)
{
        return V(json_array());
}

struct jv *jv_string_new(const char *s)
{
        return V(json_string(s));
}

struct jv *jv_stringn_new(const char *s, size_t n)
{
        return V(json_stringn(s, n));
}

struct jv *jv_integer_new(int64_t i)
{
        return V(json_integer(i));
}

struct jv *jv_real_new(double d)
{
        return V(json_real(d));
}

struct jv *jv_bool_new(bool b)
{
        return V(json_boolean(b));
}

struct jv *jv_null_new(void)
{
        return V(json_null());
}

struct jv *jv_string_array_new(char *const *l)
{
        struct jv *a = jv_array_new();

        for (; a && l && *l; l++)
                if (jv_array_append_new(a, jv_string_new(*l)) < 0)
                        a = jv_unref(a);
        return a;
}

int jv_object_set_new(struct jv *o, const char *key, struct jv *v)
{
        if (!v)
                return -ENOMEM;
        return json_object_set_new(J(o), key, J(v)) < 0 ? -ENOMEM : 0;
}

int jv_array_append_new(struct jv *a, struct jv *v)
{
        if (!v)
                return -ENOMEM;
        return json_array_append_new(J(a), J(v)) < 0 ? -ENOMEM : 0;
}

int jv_object_del(struct jv *o, const char *key)
{
        return json_object_del(J(o), key) < 0 ? -ENOENT : 0;
}

int jv_dump(const struct jv *v, unsigned flags, char **ret)
{
        size_t f = JSON_ENCODE_ANY;
        char *s;

        f |= (flags & JV_PRETTY) ? JSON_INDENT(2) : JSON_COMPACT;
        if (flags & JV_SORT_KEYS)
                f |= JSON_SORT_KEYS;
        s = json_dumps(JC(v), f);
        if (!s)
                return -ENOMEM;
        /* Hand the caller memory it frees with free(): jansson uses malloc by default. */
        *ret = s;
        return 0;
}

static_assert(sizeof(json_int_t) == sizeof(int64_t), "jv_pack's I reads an int64_t");

struct jv *jv_vpack(const char *fmt, va_list ap)
{
        /* jansson releases the `o` arguments it has not consumed when packing fails. */
        return V(json_vpack_ex(NULL, 0, fmt, ap));
}

struct jv *jv_pack(const char *fmt, ...)
{
        struct jv *v;
        va_list ap;

        va_start(ap, fmt);
        v = jv_vpack(fmt, ap);
        va_end(ap);
        return v;
}

struct jv *jv_opt(bool want, struct jv *v, bool *lost)
{
        if (!want)
                return jv_unref(v);
        if (!v)
                *lost = true;
        return v;
}

int jv_quote(const char *s, char **ret)
{
        json_t *j = json_string(s);
        int r;

        if (!j)
                return -EINVAL;
        r = jv_dump(V(j), 0, ret);
        json_decref(j);
        return r;
}

static const char *escape_of(unsigned char c, char tmp[7])
{
        switch (c) {
        case '"':
                return "\\\"";
        case '\\':
                return "\\\\";
        case '\b':
                return "\\b";
        case '\f':
                return "\\f";
        case '\n':
                return "\\n";
        case '\r':
                return "\\r";
        case '\t':
                return "\\t";
        default:
                break;
        }
        if (c >= 0x20)
                return NULL;
        (void)snprintf(tmp, 7, "\\u%04x", c);
        return tmp;
}

int jv_append_string(struct strbuf *sb, const char *s, size_t len)
{
        size_t run = 0;
        char tmp[7];
        int r;

        if (!utf8_is_valid(s, len))
                return -EINVAL;
        r = strbuf_addc(sb, '"');
        for (size_t i = 0; r >= 0 && i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c >= 0x20 && c != '"' && c != '\\')
                        continue; /* the common case: copied in runs */
                const char *esc = escape_of(c, tmp);
                r = strbuf_add(sb, s + run, i - run);
                if (r >= 0)
                        r = strbuf_adds(sb, esc);
                run = i + 1;
        }
        if (r >= 0)
                r = strbuf_add(sb, s + run, len - run);
        return r < 0 ? r : strbuf_addc(sb, '"');
}
