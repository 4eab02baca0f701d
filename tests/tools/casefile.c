/* SPDX-License-Identifier: Apache-2.0 */
/* Parser of the data-driven case files (casefile.h). */

#include "casefile.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

static size_t unescape(char *s)
{
        size_t o = 0;

        for (size_t i = 0; s[i]; i++) {
                if (s[i] != '\\' || !s[i + 1]) {
                        s[o++] = s[i];
                        continue;
                }
                i++;
                switch (s[i]) {
                case 'n':
                        s[o++] = '\n';
                        break;
                case 'r':
                        s[o++] = '\r';
                        break;
                case 't':
                        s[o++] = '\t';
                        break;
                case 'x':
                        if (hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
                                s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
                                i += 2;
                                break;
                        }
                        s[o++] = 'x';
                        break;
                default:
                        s[o++] = s[i];
                        break;
                }
        }
        s[o] = '\0';
        return o;
}

static bool is_raw(const char *key, const char *const *raw)
{
        for (size_t i = 0; raw && raw[i]; i++)
                if (strcmp(raw[i], key) == 0)
                        return true;
        return false;
}

static void add_field(struct case_block *b, char *line, const char *const *raw)
{
        char *colon = strstr(line, ": ");
        char *key, *value;

        if (!colon) {
                size_t n = strlen(line);
                if (n == 0 || line[n - 1] != ':') {
                        fprintf(stderr, "bad case line: %s\n", line);
                        abort();
                }
                line[n - 1] = '\0';
                colon = line + n - 1;
                value = colon;
        } else {
                *colon = '\0';
                value = colon + 2;
        }
        key = line;
        b->fields = realloc(b->fields, (b->n + 1) * sizeof(*b->fields));
        b->fields[b->n].key = strdup(key);
        b->fields[b->n].value = strdup(value);
        b->fields[b->n].len = is_raw(key, raw) ? strlen(value) : unescape(b->fields[b->n].value);
        b->n++;
}

static void parse_file(const char *path, const char *const *raw, struct case_file *f)
{
        FILE *in = fopen(path, "re");
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        int lineno = 0;
        bool open_block = false;

        if (!in) {
                perror(path);
                abort();
        }
        while ((len = getline(&line, &cap, in)) >= 0) {
                lineno++;
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = '\0';
                if (line[0] == '#')
                        continue;
                if (len == 0) {
                        open_block = false;
                        continue;
                }
                if (!open_block) {
                        f->blocks = realloc(f->blocks, (f->n + 1) * sizeof(*f->blocks));
                        f->blocks[f->n] = (struct case_block){ .line = lineno };
                        f->n++;
                        open_block = true;
                }
                add_field(&f->blocks[f->n - 1], line, raw);
        }
        free(line);
        fclose(in);
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t case_files_load(const char *area, const char *const *raw, struct case_file **ret)
{
        const char *src = getenv("B4BOX_SRCDIR");
        char dir[4096], path[8192];
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        DIR *d;

        snprintf(dir, sizeof(dir), "%s/tests/data/%s", src ? src : ".", area);
        d = opendir(dir);
        if (!d) {
                perror(dir);
                abort();
        }
        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l > 5 && strcmp(de->d_name + l - 5, ".test") == 0) {
                        names = realloc(names, (n + 1) * sizeof(*names));
                        names[n++] = strdup(de->d_name);
                }
        }
        closedir(d);
        qsort(names, n, sizeof(*names), cmp_names);
        *ret = calloc(n ? n : 1, sizeof(**ret));
        for (size_t i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                (*ret)[i].name = names[i];
                parse_file(path, raw, &(*ret)[i]);
        }
        free(names);
        return n;
}

void case_files_free(struct case_file *f, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                for (size_t b = 0; b < f[i].n; b++) {
                        for (size_t k = 0; k < f[i].blocks[b].n; k++) {
                                free(f[i].blocks[b].fields[k].key);
                                free(f[i].blocks[b].fields[k].value);
                        }
                        free(f[i].blocks[b].fields);
                }
                free(f[i].blocks);
                free(f[i].name);
        }
        free(f);
}

const struct case_field *case_get(const struct case_block *b, const char *key)
{
        for (size_t i = 0; i < b->n; i++)
                if (strcmp(b->fields[i].key, key) == 0)
                        return &b->fields[i];
        return NULL;
}

const char *case_str(const struct case_block *b, const char *key)
{
        const struct case_field *f = case_get(b, key);

        return f ? f->value : NULL;
}
