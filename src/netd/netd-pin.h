/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * b4box-netd's pins: set elements written straight over netlink (libnftnl + libmnl), one
 * transaction per answer (docs/native.md §Network). The table and its sets exist already
 * (src/lib/hostnet/b4box.nft); netd never creates or changes anything else.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mnl_socket;

struct pinner {
        struct mnl_socket *nl; /* owned */
        uint32_t portid, seq;
        bool update; /* the kernel refreshes a pin on an add (pinner_open() says; a test may
                      * clear it for the add, delete, add of older kernels) */
};

/* One element: pin4 / dpin4 (iif . ip), pins_<ifindex> (ip . proto . port) or pinsr_<ifindex>
 * (ip . proto . port range, with key_end). */
struct pin_elem {
        uint8_t key[16], key_end[16];
        size_t len;
        bool range;
};

/* pinner_open() - a netfilter netlink socket. Return: 0 or a negative errno. */
int pinner_open(struct pinner *p);
/* pinner_close() - close it (a closed or never opened pinner is fine). */
void pinner_close(struct pinner *p);

/* pin_key4() / pin_key4p() - fill @e with the key of a pin4 or dpin4 element / of a name:port
 * pin: pins_<ifindex>'s when @lo == @hi, else pinsr_<ifindex>'s (@e->range). */
void pin_key4(struct pin_elem *e, unsigned ifindex, const uint8_t ip[4]);
void pin_key4p(struct pin_elem *e, const uint8_t ip[4], uint8_t proto, uint16_t lo, uint16_t hi);

#define PIN_SET_NAME_MAX 24

/* pin_set4p() - the name of @ifindex's own set of pins with one port, "pins_<ifindex>", or
 * (@ranges) with a port range, "pinsr_<ifindex>" (the thread's acquire made them, when its
 * list has such entries: src/lib/hostnet/nft-elems.c). */
void pin_set4p(unsigned ifindex, bool ranges, char out[PIN_SET_NAME_MAX]);

/* pin_key_iif() - fill @e with the key of an `audited` element (the thread's ifindex). */
void pin_key_iif(struct pin_elem *e, unsigned ifindex);

/*
 * pinner_run() - add @n elements to set @set of `inet @table` with a fresh timeout of
 * @timeout_ms, in one transaction (one add with @p->update, else add, delete, add; 0: no
 * timeout, for a set without one). Return: 0, or
 * a negative errno: the kernel's
 * (-ENOENT: no such table or set) or -EPROTO when an acknowledgement is missing.
 */
int pinner_run(struct pinner *p,
               const char *table,
               const char *set,
               const struct pin_elem *e,
               size_t n,
               uint64_t timeout_ms);

/* What pinner_dump() reports for one element: its key and its counter (0 without one). */
typedef void pin_dump_fn(
        const uint8_t *key, size_t len, uint64_t packets, uint64_t bytes, void *data);

/*
 * pinner_dump() - call @fn for every element of set @set of `inet @table` (all threads':
 * the caller filters by key), with its counter. Not thread-safe for one @p.
 * Return: 0, or a negative errno (the kernel's; -ENOMEM).
 */
int pinner_dump(struct pinner *p, const char *table, const char *set, pin_dump_fn *fn, void *data);

/* pinner_del() - delete @n elements (keys only) from @set in one transaction. */
int pinner_del(
        struct pinner *p, const char *table, const char *set, const struct pin_elem *e, size_t n);

/*
 * pinner_forget() - delete the elements of @set whose key starts with @ifindex (host order,
 * non-interval sets: acct4, deny4) in one transaction, after a dump. Return: 0 or a negative
 * errno.
 */
int pinner_forget(struct pinner *p, const char *table, const char *set, unsigned ifindex);
