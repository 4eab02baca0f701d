/* SPDX-License-Identifier: Apache-2.0 */
/* A kept agent connection (agent-client.h, "a kept connection"): Docker's and Kubernetes'. */

#include "agent-client.h"
#include "base/macro.h"

void agent_slot_init(struct agent_slot *s)
{
        (void)pthread_mutex_init(&s->lock, NULL);
        s->conn = NULL;
}

void agent_slot_clear(struct agent_slot *s)
{
        agent_conn_free(TAKE_PTR(s->conn));
        (void)pthread_mutex_destroy(&s->lock);
}

int agent_slot_get(struct agent_slot *s,
                   agent_connect_fn *connect,
                   void *userdata,
                   struct agent_conn **ret,
                   struct b4_error *err)
{
        int r = 0;

        (void)pthread_mutex_lock(&s->lock);
        if (!s->conn)
                r = connect(userdata, &s->conn, err);
        *ret = s->conn;
        (void)pthread_mutex_unlock(&s->lock);
        return r < 0 ? r : 0;
}

bool agent_slot_lost(struct agent_slot *s)
{
        bool lost;

        (void)pthread_mutex_lock(&s->lock);
        lost = s->conn && !agent_conn_alive(s->conn);
        (void)pthread_mutex_unlock(&s->lock);
        return lost;
}

void agent_slot_reset(struct agent_slot *s)
{
        struct agent_conn *old;

        (void)pthread_mutex_lock(&s->lock);
        old = TAKE_PTR(s->conn);
        (void)pthread_mutex_unlock(&s->lock);
        agent_conn_free(old);
}
