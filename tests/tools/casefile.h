/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Data-driven case files (tests/data/<area>/NAME.test): blocks separated by blank lines, each
 * line "key: value", '#' starts a comment line. Values are unescaped (\n \r \t \\ \xHH)
 * except for keys listed as raw by the caller (JSON arguments).
 */

#include <stddef.h>

struct case_field {
        char *key;
        char *value; /* NUL-terminated past len */
        size_t len;
};

struct case_block {
        struct case_field *fields;
        size_t n;
        int line; /* first line, for messages */
};

struct case_file {
        char *name;
        struct case_block *blocks;
        size_t n;
};

/* Load every *.test file of tests/data/@area (sorted). Returns the count; aborts on errors. */
size_t case_files_load(const char *area, const char *const *raw_keys, struct case_file **ret);
void case_files_free(struct case_file *f, size_t n);
/* The first value of @key in @b, or NULL. */
const struct case_field *case_get(const struct case_block *b, const char *key);
const char *case_str(const struct case_block *b, const char *key);
