#!/usr/bin/env bash
# netns_inline_split.sh: daemons that disagree on coll_inline_max (doc/design.md 7.4): on 4
# network-namespace hosts x 1 rank, the first host's hibard with coll_inline_max 0, the others
# with the default, a small scatter and allgather (carried inside the agreement by three nodes,
# not by the fourth) fail with HIBAR_ERR_MISMATCH on every rank instead of hanging or moving
# wrong data, and large scatters (no node carries them inside) and barriers between them still
# work (tests/xrank_check --inline-split). Needs root (77 without). Under a minute.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}

. "$(dirname "$0")/hb_test.sh"

if [ "${1-}" = --inside ]; then
    NAME=hibar-is$$
    DIR=/tmp/hibar-$(id -u)-is$$
    mkdir -p "$DIR" || exit 99
    TMP=$(mktemp -d /tmp/hibar-inline.XXXXXX) || exit 99
    on_exit 'rm -rf "$DIR" "$TMP" /dev/shm/hibar-"$(id -u)"-"$NAME"-*'
    on_fail 'for l in "$DIR"/*.log; do [ -f "$l" ] && { echo "== $l" >&2; tail -n 20 "$l" >&2; }; done'
    on_fail 'echo "--- stderr" >&2; tail -n 20 "$TMP/err" >&2'
    # bed_daemons, with the first host's daemon on another setting
    on_exit 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null'
    PIDS=()
    first=1
    for hs in $HIBAR_TESTBED_HOSTS; do
        ns=${hs%%:*}
        extra=()
        [ $first -eq 1 ] && extra=(-o coll_inline_max=0)
        first=0
        "$HIBAR_TESTBED_HOSTEXEC" "$ns" "$bld/daemon/hibard" -f --config "$HIBAR_TESTBED_CONFIG" \
            --node "$ns" -o "cluster=$NAME" -o "run_dir=$DIR" "${extra[@]}" >"$DIR/$ns.log" 2>&1 &
        PIDS+=($!)
    done
    up=0
    for _ in $(seq 100); do
        "$bld/tools/hibar-cluster" --config "$HIBAR_TESTBED_CONFIG" --set "cluster=$NAME" \
            --set "run_dir=$DIR" status >/dev/null 2>&1 && { up=1; break; }
        sleep 0.2
    done
    [ $up -eq 1 ] || fail "daemons not ready"
    cp "$bld/tests/xrank_check" "$TMP/xrank_check" || exit 99
    timeout -s TERM 300 "$bld/tools/hibar-run" --config "$HIBAR_TESTBED_CONFIG" \
        -o "cluster=$NAME" -o "run_dir=$DIR" -n 4 -N 1 "$TMP/xrank_check" --ops 0 --inline-split \
        >"$TMP/out" 2>"$TMP/err" || fail "hibar-run exit $?"
    grep -q "^xrank_check: ok 0 operations on 4 ranks" "$TMP/out" || fail "no success line"
    grep -q "disagree on carrying the data inside the agreement" "$DIR"/*.log ||
        fail "no daemon named the disagreement"
    echo "PASS: 4 hosts x 1 rank, coll_inline_max split 0 / default: MISMATCH everywhere"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: no ip"; exit 77; }
[ -x "$bld/tests/xrank_check" ] || { echo "SKIP: tests/xrank_check not built"; exit 77; }
exec "$src/tests/netns/testbed" --name "is$$" --net 10.229 --sites 1 --nodes 4 -- "$0" --inside
