/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fail-fast table of the wait for Running (src/lib/kube/wait.c, docs/kubernetes.md):
 * which Pod statuses keep waiting, which run, which fail and with what words.
 */

#include <string.h>

#include "b4-test.h"
#include "base/macro.h"
#include "json/json.h"
#include "kube/provider.h"

static enum kube_pod_verdict verdict_of(const char *json, unsigned seen, char *why)
{
        struct jv *pod = NULL;
        enum kube_pod_verdict v;

        assert_int_equal(jv_parse(json, strlen(json), &pod, NULL), 0);
        why[0] = '\0';
        v = kube_pod_verdict(pod, seen, why);
        jv_unref(pod);
        return v;
}

#define WAITING(reason, msg)                                                        \
 "{\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"sandbox\"," \
 "\"state\":{\"waiting\":{\"reason\":\"" reason "\",\"message\":\"" msg "\"}}}]}}"

static void test_table(void **state)
{
        static const struct {
                const char *pod;
                unsigned seen;
                enum kube_pod_verdict want;
                const char *why; /* a substring of the reason kept, or NULL */
        } cases[] = {
                { "{}", 1, KUBE_POD_WAIT, NULL },
                { "{\"status\":{\"phase\":\"Pending\"}}", 1, KUBE_POD_WAIT, NULL },
                { "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\","
                  "\"state\":{\"running\":{\"startedAt\":\"x\"}}}]}}",
                  1, KUBE_POD_RUNNING, NULL },
                /* phase Running alone is not enough: the container must run */
                { "{\"status\":{\"phase\":\"Running\"}}", 1, KUBE_POD_WAIT, NULL },
                /* a running container of another name does not count */
                { "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"other\","
                  "\"state\":{\"running\":{}}}]}}",
                  1, KUBE_POD_WAIT, NULL },
                { WAITING("ContainerCreating", ""), 3, KUBE_POD_WAIT, "ContainerCreating" },
                { WAITING("ErrImagePull", "pull access denied"), 1, KUBE_POD_FAILED,
                  "ErrImagePull: pull access denied" },
                { WAITING("ImagePullBackOff", "Back-off pulling image"), 1, KUBE_POD_FAILED,
                  "ImagePullBackOff" },
                { WAITING("InvalidImageName", "bad"), 1, KUBE_POD_FAILED, "InvalidImageName" },
                { WAITING("CrashLoopBackOff", "back-off"), 1, KUBE_POD_FAILED, "CrashLoopBackOff" },
                { WAITING("CreateContainerError", "x"), 1, KUBE_POD_WAIT, "CreateContainerError" },
                { WAITING("CreateContainerError", "x"), 2, KUBE_POD_FAILED,
                  "CreateContainerError" },
                { "{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\"}}", 1, KUBE_POD_FAILED,
                  "Evicted: entered Failed" },
                { "{\"status\":{\"phase\":\"Succeeded\"}}", 1, KUBE_POD_FAILED,
                  "entered Succeeded" },
                { "{\"metadata\":{\"deletionTimestamp\":\"t\"},\"status\":{\"phase\":\"Running\"}}",
                  1, KUBE_POD_FAILED, "Terminating" },
                /* Unschedulable keeps waiting (an autoscaler may add a node), named for the
                 * timeout's message */
                { "{\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
                  "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes are "
                  "available\"}]}}",
                  5, KUBE_POD_WAIT, "Unschedulable: 0/3 nodes are available" },
                /* sleep infinity not understood: the container terminated */
                { "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"sandbox\","
                  "\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}},\"lastState\":{"
                  "\"terminated\":{\"exitCode\":1,\"message\":\"sleep: invalid number "
                  "'infinity'\"}}}]}}",
                  1, KUBE_POD_FAILED, "exit code 1, sleep: invalid number 'infinity'" },
                /* hostile: control characters in the message are replaced, wrong types ignored */
                { WAITING("ErrImagePull", "a\\nb\\u001bc"), 1, KUBE_POD_FAILED,
                  "ErrImagePull: a b c" },
                { "{\"status\":{\"phase\":7,\"containerStatuses\":{\"name\":\"sandbox\"}}}", 1,
                  KUBE_POD_WAIT, NULL },
        };

        char why[KUBE_WHY_MAX];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                enum kube_pod_verdict v = verdict_of(cases[i].pod, cases[i].seen, why);

                if (v != cases[i].want)
                        fail_msg("case %zu: verdict %d, want %d (%s)", i, v, cases[i].want, why);
                if (cases[i].why && !strstr(why, cases[i].why))
                        fail_msg("case %zu: why \"%s\" lacks \"%s\"", i, why, cases[i].why);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
