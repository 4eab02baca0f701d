/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Corpus replay without libFuzzer: run LLVMFuzzerTestOneInput over every regular file in
 * each directory (or file) given on the command line, so a corpus is a regression test under
 * any compiler. Prints TAP-free progress; exits non-zero if an input cannot be read.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
        FILE *f = fopen(path, "re");
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0, n;

        if (!f) {
                perror(path);
                return -1;
        }
        do {
                if (len == cap) {
                        uint8_t *nb = realloc(buf, cap ? cap * 2 : 4096);

                        if (!nb)
                                break;
                        buf = nb;
                        cap = cap ? cap * 2 : 4096;
                }
                n = fread(buf + len, 1, cap - len, f);
                len += n;
        } while (n > 0);
        fclose(f);
        /* Hand over an exact-size copy so ASan sees reads past the end. */
        uint8_t *exact = malloc(len ? len : 1);
        if (!exact) {
                free(buf);
                return -1;
        }
        if (len)
                memcpy(exact, buf, len);
        free(buf);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
        return 0;
}

static int replay_dir(const char *dir, int *count)
{
        struct dirent *de;
        DIR *d = opendir(dir);
        int r = 0;

        if (!d) {
                perror(dir);
                return -1;
        }
        while ((de = readdir(d))) {
                char path[4096];
                struct stat st;

                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (replay_file(path) < 0)
                        r = -1;
                (*count)++;
        }
        closedir(d);
        return r;
}

int main(int argc, char **argv)
{
        int count = 0, r = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;

                if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                        if (replay_dir(argv[i], &count) < 0)
                                r = 1;
                } else if (replay_file(argv[i]) < 0) {
                        r = 1;
                } else {
                        count++;
                }
        }
        printf("replayed %d inputs\n", count);
        if (count == 0) {
                fprintf(stderr, "no inputs found\n");
                return 1;
        }
        return r;
}
