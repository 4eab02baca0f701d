/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Discretionary access control as the kernel applies it to the sandbox user (audit H1), for
 * the archive endpoints that dockerd serves as root: the walk and the archive batch decide from
 * each tar member's owner, group and mode what the user could reach. The identity comes from
 * inside the container (an exec as the user): uid, every group of the process, and the
 * effective capabilities, since only CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH bypass the bits
 * (root without them is an ordinary owner: CapDrop ALL).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"

#define CAP_DAC_OVERRIDE_BIT    (1ull << 1)
#define CAP_DAC_READ_SEARCH_BIT (1ull << 2)

static int parse_groups(const char *s, struct docker_dac *u)
{
        while (*s) {
                char *end;
                unsigned long g;

                if (*s == ' ') {
                        s++;
                        continue;
                }
                if (u->n_groups >= DOCKER_DAC_MAX_GROUPS)
                        return -E2BIG;
                errno = 0;
                g = strtoul(s, &end, 10);
                if (errno || end == s || (*end && *end != ' ') || g > UINT32_MAX)
                        return -EPROTO;
                u->groups[u->n_groups++] = (gid_t)g;
                s = end;
        }
        return 0;
}

/* "U <uid>" / "G <gid> <gid>..." / "C <CapEff hex>" lines, in any order, each exactly once. */
int docker_dac_parse(const char *text, struct docker_dac *ret)
{
        struct docker_dac u = { 0 };
        unsigned seen = 0;

        for (const char *l = text; *l;) {
                const char *nl = strchrnul(l, '\n');
                char line[1024], *end;
                unsigned long long v;
                int r = 0;

                if ((size_t)(nl - l) >= sizeof(line) || nl - l < 2 || l[1] != ' ')
                        return -EPROTO;
                memcpy(line, l, (size_t)(nl - l));
                line[nl - l] = '\0';
                errno = 0;
                if (line[0] == 'U' && !(seen & 1)) {
                        v = strtoull(line + 2, &end, 10);
                        r = errno || end == line + 2 || *end || v > UINT32_MAX ? -EPROTO : 0;
                        u.uid = (uid_t)v;
                        seen |= 1;
                } else if (line[0] == 'G' && !(seen & 2)) {
                        r = parse_groups(line + 2, &u);
                        seen |= 2;
                } else if (line[0] == 'C' && !(seen & 4)) {
                        v = strtoull(line + 2, &end, 16);
                        r = errno || end == line + 2 || *end ? -EPROTO : 0;
                        u.override = (v & CAP_DAC_OVERRIDE_BIT) != 0;
                        u.read_search = (v & CAP_DAC_READ_SEARCH_BIT) != 0;
                        seen |= 4;
                } else
                        r = -EPROTO;
                if (r < 0)
                        return r;
                l = *nl ? nl + 1 : nl;
        }
        if (seen != 7)
                return -EPROTO;
        *ret = u;
        return 0;
}

static bool in_groups(const struct docker_dac *u, gid_t g)
{
        for (size_t i = 0; i < u->n_groups; i++)
                if (u->groups[i] == g)
                        return true;
        return false;
}

/* generic_permission(): owner class, else group class, else other; then the capabilities. */
bool docker_dac_allows(const struct docker_dac *u,
                       uid_t owner,
                       gid_t group,
                       unsigned mode,
                       bool is_dir,
                       unsigned want)
{
        unsigned bits = owner == u->uid ? mode >> 6 : in_groups(u, group) ? mode >> 3 : mode;

        if ((bits & want & 07) == (want & 07))
                return true;
        if (u->override && (is_dir || !(want & DOCKER_DAC_X) || (mode & 0111)))
                return true;
        return u->read_search && !(want & DOCKER_DAC_W) && (is_dir || !(want & DOCKER_DAC_X));
}
