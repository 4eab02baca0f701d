/* SPDX-License-Identifier: Apache-2.0 */
#include "b4-test.h"
int main(void)
{
        return 0;
}
