/* SPDX-License-Identifier: Apache-2.0 */
/* PLACEHOLDER main until the CLI module lands. */
#include <stdio.h>

#include "b4box/b4.h"

int main(void)
{
        printf("b4box %s\n", b4_version());
        return 0;
}
