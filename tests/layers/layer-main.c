/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The body of every per-layer link test (tests/layers/meson.build). The test is the link:
 * the binary holds every object of one layer (link_whole) and only the libraries that layer's
 * meson.build lets it use, and is linked with --no-undefined, so a call upward or sideways
 * is an undefined reference and the build fails. Run, it proves the result also loads.
 */

#include <stdio.h>

int main(int argc, char **argv)
{
        printf("1..1\nok 1 - layer %s links alone\n", argc > 1 ? argv[1] : "?");
        return 0;
}
