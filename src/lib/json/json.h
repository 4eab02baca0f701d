/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A thin layer over jansson: the only module that includes <jansson.h>. Values are
 * reference counted; functions named *_new return a new reference, getters borrow.
 * Setters ending in _new take ownership of the value passed (even on failure).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b4box/error.h"

struct jv; /* a JSON value */

enum jv_type {
        JV_OBJECT,
        JV_ARRAY,
        JV_STRING,
        JV_INTEGER,
        JV_REAL,
        JV_TRUE,
        JV_FALSE,
        JV_NULL,
};

enum jv_dump_flags {
        JV_SORT_KEYS = 1 << 0, /* keys in bytewise order (canonical forms) */
        JV_PRETTY = 1 << 1,    /* indent by 2; compact otherwise */
};

/*
 * Parse @len bytes. Duplicate object keys are refused; "\u0000" inside strings is allowed
 * (use jv_string_length()). Return: 0, -EINVAL (message "<what> at line L column C"), -ENOMEM.
 */
int jv_parse(const char *buf, size_t len, struct jv **ret, struct b4_error *err);

struct jv *jv_ref(struct jv *v);
struct jv *jv_unref(struct jv *v); /* NULL ok; returns NULL */

static inline void jv_unrefp(struct jv **v)
{
        *v = jv_unref(*v);
}

enum jv_type jv_typeof(const struct jv *v);
/* "object", "array", "string", "number", "boolean", "null" (as JavaScript's typeof says). */
const char *jv_type_name(const struct jv *v);
bool jv_is_object(const struct jv *v);
bool jv_is_array(const struct jv *v);
bool jv_is_string(const struct jv *v);
bool jv_is_number(const struct jv *v);
bool jv_is_bool(const struct jv *v);
bool jv_is_null(const struct jv *v);
/* A number whose value is integral and within +-2^53 (JavaScript's Number.isSafeInteger). */
bool jv_is_safe_integer(const struct jv *v);

/* Borrowed; NULL when absent or not an object. */
struct jv *jv_object_get(const struct jv *o, const char *key);
size_t jv_object_size(const struct jv *o);
/* Iteration in insertion order: for (it = jv_object_iter(o); it; it = jv_object_next(o, it)). */
void *jv_object_iter(const struct jv *o);
void *jv_object_next(const struct jv *o, void *it);
const char *jv_iter_key(void *it);
struct jv *jv_iter_value(void *it);

size_t jv_array_size(const struct jv *a);
struct jv *jv_array_get(const struct jv *a, size_t i); /* borrowed; NULL out of range */

const char *jv_string(const struct jv *v); /* borrowed; NULL when not a string */
size_t jv_string_length(const struct jv *v);
int64_t jv_integer(const struct jv *v); /* integer value; a real is truncated */
double jv_number(const struct jv *v);   /* integer or real as double */
bool jv_is_true(const struct jv *v);

struct jv *jv_object_new(void);
struct jv *jv_array_new(void);
struct jv *jv_string_new(const char *s);            /* NULL on OOM or invalid UTF-8 */
struct jv *jv_stringn_new(const char *s, size_t n); /* NULL on OOM or invalid UTF-8 */
struct jv *jv_integer_new(int64_t i);
struct jv *jv_real_new(double d);
struct jv *jv_bool_new(bool b);
struct jv *jv_null_new(void);
/* An array of the strings of NULL-terminated @l (NULL = empty). NULL on OOM or bad UTF-8. */
struct jv *jv_string_array_new(char *const *l);
/* Take ownership of @v. Return: 0 or -ENOMEM. */
int jv_object_set_new(struct jv *o, const char *key, struct jv *v);
int jv_array_append_new(struct jv *a, struct jv *v);
int jv_object_del(struct jv *o, const char *key);

/*
 * jv_pack() - build a value in one expression, as jansson's json_pack() does:
 *   jv_pack("{s:s, s:I, s:b, s:o*}", "name", name, "size", (int64_t)n, "ok", true,
 *           "details", details_or_null)
 * Whitespace, ':' and ',' in @fmt only separate; the letters are:
 *   { }     an object: key, value, key, value ... (a key is s, s#, s% or s*)
 *   [ ]     an array
 *   s       a string from a const char * (UTF-8, copied)
 *   s#      a string from a const char * and an int length
 *   s%      a string from a const char * and a size_t length
 *   s?      as s, a NULL pointer gives null
 *   s*      as s, a NULL pointer leaves the member (key and value) or element out
 *   n       null (takes no argument)
 *   b       true or false from an int (bool promotes to int)
 *   i       an integer from an int
 *   I       an integer from an int64_t
 *   f       a real from a double
 *   o       a struct jv *, stolen: the result owns the reference, and on failure it is
 *           released, so `o` arguments never leak and need no cleanup by the caller
 *   O       a struct jv *, borrowed: the result takes its own reference
 *   o? O?   as o / O, a NULL pointer gives null
 *   o* O*   as o / O, a NULL pointer leaves the member or element out
 * A NULL for a plain s, o or O fails (the value of a failed jv_*_new() call passed in
 * propagates as a failure here: `jv_pack("{s:o}", "k", jv_string_new(x))` needs no check
 * of its own).
 * Return: a new reference, or NULL on allocation failure, invalid UTF-8, a NULL argument
 * where the format has no '?' or '*', or a malformed format (a bug: checked by the tests).
 */
struct jv *jv_pack(const char *fmt, ...);
struct jv *jv_vpack(const char *fmt, va_list ap);
/*
 * jv_opt() - the value of a jv_pack() `o*` member that is there only when @want: @v when
 * @want, else NULL (the member is left out) after releasing @v. `o*` cannot tell a member
 * left out from a value whose constructor failed, so a wanted @v that is NULL sets *@lost:
 *   v = jv_pack("{s:o*}", "n", jv_opt(n > 0, jv_integer_new(n), &lost));
 *   if (lost) v = jv_unref(v);    -- an allocation failure, not a document without "n"
 * Return: @v or NULL; *@lost is only ever set to true.
 */
struct jv *jv_opt(bool want, struct jv *v, bool *lost);

/* Serialise; non-ASCII is written raw (UTF-8). Return: 0 or -ENOMEM; *ret is heap. */
int jv_dump(const struct jv *v, unsigned flags, char **ret);
/* Compact JSON of one string, with JSON.stringify's escaping. Return: 0, -EINVAL, -ENOMEM. */
int jv_quote(const char *s, char **ret);

struct strbuf;
/*
 * Append @s (@len bytes of UTF-8) to @sb as a quoted JSON string, escaped as JSON.stringify
 * does (quote, backslash, \b \f \n \r \t, other controls as \u00XX; everything else raw).
 * A fast path for large documents built without a tree.
 * Return: 0, -EINVAL (not valid UTF-8: nothing appended), -E2BIG/-ENOMEM from the buffer.
 */
int jv_append_string(struct strbuf *sb, const char *s, size_t len);
