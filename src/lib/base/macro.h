/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cleanup helpers, ownership moves and small macros used everywhere (STYLE.md 5.7). */

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define cleanup_(fn)   __attribute__((cleanup(fn)))
#define cleanup_free   cleanup_(freep)
#define cleanup_close  cleanup_(closep)
#define cleanup_fclose cleanup_(fclosep)
#define cleanup_strv   cleanup_(strv_freep)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define TAKE_PTR(p)            \
 ({                            \
__typeof__(p) take_ptr_tmp__ = (p); \
(p) = NULL;                         \
take_ptr_tmp__;                     \
 })

#define TAKE_FD(fd)  \
 ({                  \
int take_fd_tmp__ = (fd); \
(fd) = -EBADF;            \
take_fd_tmp__;            \
 })

/* A NULL-safe destructor `T *fn(T *)` that returns NULL gets a cleanup function fn##p. */
#define DEFINE_CLEANUP_FUNC(type, fn) \
 static inline void fn##p(type **p)   \
 {                                    \
  if (*p)                             \
   *p = fn(*p);                       \
 }

/* Convert a libc 0/-1 return into 0/-errno. */
#define RET_NERRNO(expr)                 \
 ({                                      \
int ret_nerrno_r__ = (expr);                  \
ret_nerrno_r__ < 0 ? -errno : ret_nerrno_r__; \
 })

#ifdef NDEBUG
# define NEVER(x) (x)
#else
# define NEVER(x) (assert(!(x)), (x))
#endif

static inline void freep(void *p)
{
        free(*(void **)p);
}

static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                (void)close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd)
{
        *fd = safe_close(*fd);
}

static inline void fclosep(FILE **f)
{
        if (*f)
                (void)fclose(*f);
        *f = NULL;
}

/* Sorting that accepts (NULL, 0): the C library's base pointer must never be NULL. */
static inline void qsort_safe(void *base,
                              size_t n,
                              size_t size,
                              int (*cmp)(const void *, const void *))
{
        if (n > 1)
                qsort(base, n, size, cmp); /* checksrc: allow */
}

/* The struct of type @type whose member @member is at @ptr (through void *: no cast-align). */
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
