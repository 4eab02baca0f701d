#!/usr/bin/env bash
# What a cold native acquire does (docs/native.md "What a cold acquire costs"), TAP, root only,
# run by in-netns.sh: B4BOX_TRACE_ACQUIRE=1 prints one line per acquire whose phases add up to
# its total; a cold one shows the clone child's steps, a warm one (adoption) none; allow mode
# shows the network phase; and no run/ or owners/ record is fsync()ed on the acquire path
# (counted with strace over the whole CLI process tree).
set -uo pipefail
b4box=$(realpath "$1")
if [ "$(id -u)" -ne 0 ] || [ ! -d /sys/fs/cgroup ]; then
        echo "1..0 # SKIP needs root and /sys/fs/cgroup"
        exit 0
fi
dir=$(mktemp -d)
cleanup() {
        for t in tr-cold tr-sync; do "$b4box" --state "$dir/st" destroy "$t" >/dev/null 2>&1; done
        (cd "$dir/allow" 2>/dev/null && "$b4box" --state "$dir/sta" destroy tr-allow >/dev/null 2>&1)
        rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir" || exit 1
mkdir allow
echo '{"sandbox":{"provider":{"type":"native","scope":"acq-trace"},"network":{"mode":"allow"}}}' \
        >allow/b4box.json
echo "1..9"
n=0
check() {
        n=$((n + 1))
        if eval "$2"; then echo "ok $n - $1"; else echo "not ok $n - $1"; return 1; fi
}
x() { "$b4box" --state "$dir/st" "$@"; }
# phase value of line $1: $2
phase() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
# the sum of the provider's phases of line $1 (child.* are the clone child's own timeline,
# which runs alongside them), or with $2 = child, of the child's
phase_sum() {
        if [ "${2:-}" = child ]; then
                tr ' ' '\n' <<<"$1" | grep '^child\.' | cut -d= -f2 | paste -sd+ | bc
        else
                tr ' ' '\n' <<<"$1" | grep '=' | grep -v -e '^total=' -e '^child\.' | cut -d= -f2 | paste -sd+ | bc
        fi
}

x exec --thread tr-cold -- true 2>"$dir/e0"
check "no trace without B4BOX_TRACE_ACQUIRE" '! grep -q "b4box trace" "$dir/e0"'
x destroy tr-cold >/dev/null

B4BOX_TRACE_ACQUIRE=1 x exec --thread tr-cold -- true 2>"$dir/e1"
line=$(grep '^b4box trace acquire tr-cold ok total=' "$dir/e1")
check "a cold acquire prints one trace line" '[ "$(grep -c "b4box trace" "$dir/e1")" = 1 ] && [ -n "$line" ]'
total=$(phase "$line" total)
sum=$(phase_sum "$line")
# each phase is rounded down to a microsecond: the sum may fall short by one per phase
check "the provider's phases add up to its total ($sum of $total us)" \
        '[ "$sum" -le "$total" ] && [ $((total - sum)) -le 60 ]'
# the child works (from the "go" to its exec) while the provider plumbs the network, if any,
# then waits
csum=$(phase_sum "$line" child)
net_us=$(phase "$line" net)
wait_us=$(($(phase "$line" spawn.go) + ${net_us:-0} + $(phase "$line" spawn.wait)))
check "the child's phases fit in the provider's net + wait ($csum of $wait_us us)" \
        '[ "$csum" -le "$wait_us" ]' || echo "# $line"
want="idmap workspace intent cgroup_create mount_plan spawn.clone spawn.wait child.cgroup child.cgroupns child.mount child.pivot child.userns child.exec keeper_record"
missing=
for p in $want; do [ -n "$(phase "$line" "$p")" ] || missing="$missing $p"; done
check "it names the cold start's phases (missing:${missing:- none})" '[ -z "$missing" ]'

B4BOX_TRACE_ACQUIRE=1 x exec --thread tr-cold -- true 2>"$dir/e2"
line=$(grep '^b4box trace acquire tr-cold ok' "$dir/e2")
check "a warm acquire adopts: no clone, no child" \
        '[ -n "$(phase "$line" adopt)" ] && [ -z "$(phase "$line" spawn.clone)" ] && ! grep -q "child\." <<<"$line"'

(cd allow && B4BOX_TRACE_ACQUIRE=1 "$b4box" --state "$dir/sta" exec --thread tr-allow -- true) 2>"$dir/e3"
line=$(grep '^b4box trace acquire tr-allow ok' "$dir/e3")
check "allow mode traces its network phase" '[ -n "$(phase "$line" net)" ]'

# fsync()s of run/ and owners/ records during one cold acquire: none (docs/native.md says
# why; the id block record native/ids/<id> is fsync()ed once per thread, on purpose)
if command -v strace >/dev/null; then
        strace -f -qq -y -e trace=fsync,fdatasync,sync_file_range -o "$dir/sync" \
                "$b4box" --state "$dir/st" exec --thread tr-sync -- true >/dev/null 2>&1 &
        spid=$!
        cli=
        for _ in $(seq 100); do cli=$(pgrep -P "$spid" | head -1); [ -n "$cli" ] && break; sleep 0.02; done
        # strace follows the keeper, which outlives the CLI: stop tracing once the CLI is gone
        for _ in $(seq 300); do [ -n "$cli" ] && kill -0 "$cli" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$spid" 2>/dev/null # SIGTERM leaves it waiting on the keeper; it detaches
        wait "$spid" 2>/dev/null
        recs=$(grep -cE 'native/(run|owners)/' "$dir/sync")
        check "no run/ or owners/ record is fsync()ed on a cold acquire ($recs)" '[ "$recs" -eq 0 ]'
        check "the trace saw fsyncs at all (the probe works: SQLite's)" 'grep -q "b4box.db" "$dir/sync"'
else
        check "no state-dir record is fsync()ed # SKIP no strace" true
        check "the probe works # SKIP no strace" true
fi
