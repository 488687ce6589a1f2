#!/usr/bin/env bash
# xcoll_daemon.sh: collectives across daemons: every op x algorithm, random roots and sizes, on
# the emulated 12-daemon two-site cluster and the 30-daemon one; each daemon checks its data.
TEST_TAG=xcoll
. "$(dirname "$0")/daemon_lib.sh"
RANDOM=${XCOLL_SEED:-4242}
NCOLL=0

# coll N OP ALG ROOT SIZE [LANES]: the same command to all N daemons at once; all must say ok.
coll() {
    local n=$1 i out bad=0
    shift
    for ((i = 0; i < n; i++)); do
        cl ctl "$(printf 'n%02d' "$i")" coll "$@" >"$RUN_DIR/xc.$i" 2>&1 &
    done
    wait
    for ((i = 0; i < n; i++)); do
        out=$(cat "$RUN_DIR/xc.$i")
        case "$out" in *" check=ok"*) ;; *) echo "coll $*: $out"; bad=1 ;; esac
    done
    rm -f "$RUN_DIR"/xc.*
    NCOLL=$((NCOLL + 1))
    [ $bad -eq 0 ] || fail "coll $* on $n daemons"
}

# a size in 0 .. max bytes per node, mostly small, a few large
rsize() {
    local max=$1 r=$((RANDOM % 10))
    if [ "$r" -lt 3 ]; then echo $((RANDOM % 100)); elif [ "$r" -lt 8 ]; then echo $((RANDOM * 4 % 65536)); else echo $(((RANDOM * 32768 + RANDOM) % max)); fi
}

run_all() {
    local n=$1 max=$2 op alg
    for op in scatter gather bcast allgather; do
        for alg in flat binomial single-lane multi-lane auto; do
            coll "$n" "$op" "$alg" $((RANDOM % n)) "$(rsize "$max")"
        done
    done
    coll "$n" scatter multi-lane 0 1048576 2
    coll "$n" gather multi-lane $((n - 1)) 1048576 3
    coll "$n" allgather single-lane 1 0
}

CONFIG=$src/examples/local.yaml
up
run_all 12 $((4 << 20))
echo "12 daemons, 2 sites: $NCOLL collectives ok"
# mismatched arguments reach every daemon as an error, never a hang
for ((i = 0; i < 12; i++)); do
    sz=100; [ $i -eq 5 ] && sz=101
    cl ctl "$(printf 'n%02d' "$i")" coll gather flat 0 $sz >"$RUN_DIR/xc.$i" 2>&1 &
done
HIBAR_COLL_TIMEOUT_MS= wait
grep -q "err " "$RUN_DIR/xc.0" || { cat "$RUN_DIR"/xc.*; fail "mismatch not reported at the root"; }
rm -f "$RUN_DIR"/xc.*
down
check_clean

CONFIG=$src/examples/scmd-30.yaml
NCOLL=0
up
run_all 30 $((1 << 20))
echo "30 daemons: $NCOLL collectives ok"
down
check_clean
echo "PASS: collectives across daemons, every op and algorithm, data checked"
