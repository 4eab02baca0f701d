/* SPDX-License-Identifier: Apache-2.0 */
#include "b4box/version.h"

const char *b4_version(void)
{
        return B4_VERSION;
}
