#!/usr/bin/env bash
# libb4box.so exports the public API and nothing else: every defined dynamic symbol is
# b4_* (version script src/lib/libb4box.sym + -fvisibility=hidden), b4_version is one, and
# the library-internal b4_* API (store/store.h, tools/tools.h, ...) stays hidden: exactly the
# B4_PUBLIC functions of include/b4box are exported.
# Arg: path of libb4box.so
set -uo pipefail
lib=$1
echo "1..4"
syms=$(nm -D --defined-only "$lib" | awk '{print $3}')
other=$(grep -v '^b4_' <<<"$syms")
if [ -n "$syms" ] && [ -z "$other" ]; then echo "ok 1 - only b4_* exported ($(wc -l <<<"$syms") symbols)"
else echo "not ok 1 - symbols outside b4_* exported:"; sed 's/^/# /' <<<"$other"; fi
if grep -qx 'b4_version' <<<"$syms" && grep -qx 'b4_provider_new' <<<"$syms"; then echo "ok 2 - b4_version, b4_provider_new exported"
else echo "not ok 2 - b4_version or b4_provider_new not exported"; fi
# Every B4_PUBLIC function declared in include/b4box is exported (none lost to the script).
public=$(grep -rhoE 'B4_PUBLIC[^(]*\b(b4_[a-z0-9_]+)\(' "${B4BOX_SRCDIR:?}/include/b4box" |
        grep -oE 'b4_[a-z0-9_]+\($' | tr -d '(' | sort -u)
missing=$(grep -vxF -f <(printf '%s\n' "$syms") <<<"$public")
if [ -z "$missing" ]; then echo "ok 3 - every B4_PUBLIC function in include/b4box is exported"
else echo "not ok 3 - declared B4_PUBLIC but not exported:"; sed 's/^/# /' <<<"$missing"; fi
# ... and nothing else: internal b4_* names (b4_store_thread_get, b4_tools_resume) are hidden.
internal=$(grep -vxF -f <(printf '%s\n' "$public") <<<"$syms")
if [ -z "$internal" ] && ! grep -qxE 'b4_store_thread_get|b4_tools_resume' <<<"$syms"; then
        echo "ok 4 - no b4_* function outside include/b4box's B4_PUBLIC set is exported"
else echo "not ok 4 - exported but not public in include/b4box:"; sed 's/^/# /' <<<"$internal"; fi
[ -z "$other" ] && [ -z "$missing" ] && [ -z "$internal" ] && [ -n "$syms" ]
