#!/bin/bash
# daemon_orphans.sh: nothing orphaned (issue 22 item 3) on a 4-node emulated cluster (two
# chassis of two). 1. Daemons stopped with SIGTERM leave no segment, socket, pid file or key:
# only the logs hibar-cluster itself writes. 2. Daemons killed with SIGKILL leave them; the
# first daemon of a cluster with another name reclaims them at its start (logged). 3. A rank
# that is not hibard's child (so no parent-death signal reaches it), blocked in a barrier whose
# other rank never arrives, gets HIBAR_ERR_PEER_LOST (-4) once its hibard is killed.
# Every hibard reclaims the dead leftovers of any cluster at its start, so part 2 must not race
# the daemons of tests running beside it: as root the test runs in a mount namespace of its own
# with a private /dev/shm, and its clusters' run dirs live in its own directory (a daemon scans
# the directory holding its run dir). Without root part 2 is skipped.
if [ "$(id -u)" -eq 0 ] && [ -z "${HB_ORPH_PRIVATE-}" ] && command -v unshare >/dev/null; then
    export HB_ORPH_PRIVATE=1
    exec unshare --mount --propagation private sh -c \
        'mount -t tmpfs -o mode=1777 hibar-orph-shm /dev/shm && exec bash "$0" "$@"' "$0" "$@"
fi
. "$(dirname "$0")/hb_test.sh"
hb_use_run
TEST_TAG=orph
HIBAR_TEST_CONFIG=$FOUR
hb_use_cluster
RUN_DIR="$TMP/hibar-$(id -u)-$NAME"
SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR")
OR="$bld/tests/orphan_rank"
[ -x "$OR" ] || { echo "SKIP: orphan_rank not built"; exit 77; }
cp "$OR" "$TMP/orphan_rank"
OR="$TMP/orphan_rank"
f="$TMP/orph" # the ranks write FILE.RANK: their pid, then how the barrier ended
on_exit 'kill -KILL $(sed -n "s/^pid //p" "$f".[01] 2>/dev/null) 2>/dev/null'
uid=$(id -u)
segs() { ls /dev/shm | grep -F -- "hibar-$uid-$1-" || true; }
# wait_for CMD...: until CMD succeeds (a bound against hangs only: 60 s)
wait_for() {
    local i
    for ((i = 0; i < 600; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
gone() { ! kill -0 "$@" 2>/dev/null; }
pids() { cat "$RUN_DIR"/*.pid; }

# 1. SIGTERM: the daemons leave nothing behind but hibar-cluster's logs
up
[ -n "$(segs "$NAME")" ] && [ -f "$RUN_DIR/cluster.key" ] || fail "no segment or key while up"
p=$(pids)
kill -TERM $p
wait_for gone $p || fail "daemons outlived SIGTERM"
left=$(ls "$RUN_DIR" | grep -v '\.log$' || true)
[ -z "$left" ] || fail "SIGTERM left in $RUN_DIR: $left"
[ -z "$(segs "$NAME")" ] || fail "SIGTERM left in /dev/shm: $(segs "$NAME")"
echo "SIGTERM: nothing left but the logs"
down

# 2. SIGKILL: the leftovers are reclaimed by the next daemon, of another cluster
if [ -z "${HB_ORPH_PRIVATE-}" ]; then
    echo "SKIP part 2 (needs root: a private /dev/shm, or the suite's other daemons reclaim first)"
else
up
p=$(pids)
kill -KILL $p
wait_for gone $p || fail "daemons outlived SIGKILL"
old=$(segs "$NAME")
[ -n "$old" ] && [ -f "$RUN_DIR/cluster.key" ] || fail "SIGKILL left nothing to reclaim"
echo "SIGKILL left:" $old "and $RUN_DIR/cluster.key"
dead=$NAME dead_dir=$RUN_DIR
NAME="$dead-2"
RUN_DIR="$TMP/hibar-$uid-$NAME"
SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR")
on_exit 'rm -rf "$dead_dir"'
up
for s in $old; do
    [ ! -e "/dev/shm/$s" ] || fail "/dev/shm/$s not reclaimed"
    grep -q "reclaimed stale .* /dev/shm/$s " "$RUN_DIR"/*.log || fail "reclaim of $s not logged"
done
left=$(ls "$dead_dir" | grep -v '\.log$' || true)
[ -z "$left" ] || fail "not reclaimed in $dead_dir: $left"
grep -q "dead daemons of $dead_dir" "$RUN_DIR"/*.log || fail "reclaim of $dead_dir not logged"
rm -rf "$dead_dir"
echo "SIGKILL: a daemon of cluster $NAME reclaimed what $dead left"
fi

# 3. a rank that is no child of hibard (sh runs it) returns PEER_LOST when hibard dies
timeout -k 5 120 "$RUN" --config "$CONFIG" "${SETS[@]}" -H rt2 -n 2 \
    sh -c '"$0" "$1"; exit 0' "$OR" "$f" >"$OUT" 2>"$ERR" &
rp=$!
wait_for grep -qs waiting "$f.0" || fail "rank 0 did not start"
wait_for grep -qs waiting "$f.1" || fail "rank 1 did not start"
kill -KILL "$(cat "$RUN_DIR/rt2.pid")"
wait_for grep -qs "^rc " "$f.0" || fail "rank 0 still blocked after its hibard died"
cat "$f.0"
grep -q '^rc -4 ' "$f.0" || fail "rank 0's barrier: $(tail -1 "$f.0"), expected -4"
kill -KILL "$(sed -n 's/^pid //p' "$f.1")"
wait "$rp"
echo "hibar-run: exit $?"
down
check_clean
echo "PASS: SIGTERM leaves nothing; SIGKILL's leftovers reclaimed by another cluster; PEER_LOST"
