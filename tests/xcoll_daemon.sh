#!/usr/bin/env bash
# xcoll_daemon.sh: collectives across daemons: every op x algorithm (alltoall: flat, pairwise),
# random roots and sizes, on the emulated 12-daemon two-site cluster and the 30-daemon one; each
# daemon checks its data.
TEST_TAG=xcoll
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
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

# sizes for op on n nodes: allgather moves n times as much into every node
osize() { local sz; sz=$(rsize "$3"); case $1 in allgather*) sz=$((sz / $2)) ;; esac; echo "$sz"; }

run_all() {
    local n=$1 max=$2 op alg
    for op in scatter gather bcast allgather; do
        for alg in flat binomial single-lane multi-lane auto; do
            coll "$n" "$op" "$alg" $((RANDOM % n)) "$(osize "$op" "$n" "$max")"
        done
    done
    for op in scatterv gatherv allgatherv; do
        for alg in flat binomial single-lane multi-lane; do
            coll "$n" "$op" "$alg" $((RANDOM % n)) "$(osize "$op" "$n" "$max")"
        done
    done
    # alltoall: every node receives n blocks of SIZE (its root argument is unused)
    for alg in flat pairwise auto; do
        coll "$n" alltoall "$alg" $((RANDOM % n)) $(($(rsize "$max") / n / 4))
    done
    coll "$n" alltoall pairwise 0 0
    coll "$n" scatter multi-lane 0 1048576 2
    coll "$n" gather multi-lane $((n - 1)) 1048576 3
    coll "$n" allgather single-lane 1 0
}

# data_plane curve first: collective data on the encrypted links (the default, plain, below)
SETS0=("${SETS[@]}")
SETS+=(--set data_plane=curve)
CONFIG=$src/examples/local.yaml
up
run_all 12 $((4 << 20))
[ "$(stat_of n03 data_rx)" -eq 0 ] || fail "data_plane curve: n03 took frames on a plain socket"
echo "12 daemons, 2 sites, data_plane curve: $NCOLL collectives ok"
# mismatched arguments reach every daemon as an error, never a hang
for ((i = 0; i < 12; i++)); do
    sz=100; [ $i -eq 5 ] && sz=101
    cl ctl "$(printf 'n%02d' "$i")" coll gather flat 0 $sz >"$RUN_DIR/xc.$i" 2>&1 &
done
HIBAR_COLL_TIMEOUT_MS= wait
grep -q "err " "$RUN_DIR/xc.0" || { cat "$RUN_DIR"/xc.*; fail "mismatch not reported at the root"; }
rm -f "$RUN_DIR"/xc.*
# more than a daemon holds (1 GiB of layout): refused everywhere, and the next one still works
for ((i = 0; i < 12; i++)); do
    cl ctl "$(printf 'n%02d' "$i")" coll allgather flat 0 200000000 >"$RUN_DIR/xc.$i" 2>&1 &
done
wait
[ "$(cat "$RUN_DIR"/xc.* | grep -c ": err ")" -eq 12 ] || { cat "$RUN_DIR"/xc.*; fail "oversized collective not refused"; }
rm -f "$RUN_DIR"/xc.*
coll 12 bcast binomial 3 5000
# an algorithm alltoall does not have: refused everywhere
for ((i = 0; i < 12; i++)); do
    cl ctl "$(printf 'n%02d' "$i")" coll alltoall multi-lane 0 100 >"$RUN_DIR/xc.$i" 2>&1 &
done
wait
[ "$(cat "$RUN_DIR"/xc.* | grep -c ": err ")" -eq 12 ] || { cat "$RUN_DIR"/xc.*; fail "alltoall multi-lane not refused"; }
rm -f "$RUN_DIR"/xc.*
down
check_clean
export HIBAR_COLL_TIMEOUT_MS=5000 # read by the daemons at start
up
# a hung node (SIGSTOP): the root of a gather gets HIBAR_ERR_TIMEOUT (-3, HIBAR_COLL_TIMEOUT_MS)
# or HIBAR_ERR_PEER_LOST (-4, heartbeats), never hangs; the others finish their part
pid5=$(cat "$RUN_DIR/n05.pid")
kill -STOP "$pid5"
for ((i = 0; i < 12; i++)); do
    [ $i -eq 5 ] && continue
    cl ctl "$(printf 'n%02d' "$i")" coll gather flat 0 1000 >"$RUN_DIR/xc.$i" 2>&1 &
done
wait
kill -CONT "$pid5"
grep -q "^n00: err -[34] " "$RUN_DIR/xc.0" || { cat "$RUN_DIR"/xc.*; fail "hung node: no timeout at the root"; }
echo "hung node: root says $(cut -c1-60 "$RUN_DIR/xc.0")"
rm -f "$RUN_DIR"/xc.*
down
check_clean

# a killed node: every daemon learns it and every later collective fails, never hangs
up
cl ctl n00 coll bcast flat 0 1000 >/dev/null # warm: the first one links the nodes
for ((i = 1; i < 12; i++)); do cl ctl "$(printf 'n%02d' "$i")" coll bcast flat 0 1000 >/dev/null & done
wait
kill -KILL "$(cat "$RUN_DIR/n07.pid")"
sleep 3
for ((i = 0; i < 12; i++)); do
    [ $i -eq 7 ] && continue
    cl ctl "$(printf 'n%02d' "$i")" coll scatter binomial 0 5000 >"$RUN_DIR/xc.$i" 2>&1 &
done
wait
n=$(cat "$RUN_DIR"/xc.* | grep -c ": err -4 ")
[ "$n" -eq 11 ] || { cat "$RUN_DIR"/xc.*; fail "killed node: $n of 11 daemons report a lost peer"; }
echo "killed node: 11 of 11 daemons fail the next collective"
rm -f "$RUN_DIR"/xc.*
cl down >/dev/null 2>&1
rm -f "$RUN_DIR"/*.log; rmdir "$RUN_DIR" 2>/dev/null
check_clean

unset HIBAR_COLL_TIMEOUT_MS
SETS=("${SETS0[@]}")

# data_plane plain (the default): the same collectives on the unencrypted data sockets;
# intruders without the token they were given are refused and change nothing
SETS+=(--set data_plane=plain)
NCOLL=0
up
run_all 12 $((4 << 20))
tx=0
for ((i = 0; i < 12; i++)); do tx=$((tx + $(stat_of "$(printf 'n%02d' "$i")" data_tx))); done
rx3=$(stat_of n03 data_rx)
[ "$tx" -gt 0 ] && [ "$rx3" -gt 0 ] || fail "data plane: data_tx $tx, n03 data_rx $rx3"
# collectives of coll_bulk_min (4 MiB) or more sent their frames through ZeroMQ's I/O threads
btx=0
for ((i = 0; i < 12; i++)); do btx=$((btx + $(stat_of "$(printf 'n%02d' "$i")" bulk_tx))); done
[ "$btx" -gt 0 ] && [ "$btx" -lt "$tx" ] || fail "data plane: bulk_tx $btx of data_tx $tx"
out=$("$bld/tests/hbd_inject" --config "$CONFIG" "${SETS[@]}" --target n03 --mode data --as n04) ||
    fail "hbd_inject --mode data: $out"
denied=$(stat_of n03 data_denied)
[ "$denied" -ge 2 ] || fail "data plane: $out, but data_denied=$denied"
[ "$(stat_of n03 data_rx)" -eq "$rx3" ] || fail "data plane: an intruder's frame was taken"
coll 12 scatter flat 3 100000
# the fast lane carried them, and a connection without the token is refused
ftx=0
for ((i = 0; i < 12; i++)); do ftx=$((ftx + $(stat_of "$(printf 'n%02d' "$i")" fast_tx))); done
[ "$ftx" -gt 0 ] || fail "fast lane: fast_tx $ftx"
fport=$(sed -n 's/^fast //p' "$RUN_DIR/n03.port")
[ -n "$fport" ] || fail "fast lane: no 'fast PORT' line in $RUN_DIR/n03.port"
frx3=$(stat_of n03 fast_rx)
python3 - "$fport" <<'PY' || fail "fast lane: the intruder could not connect"
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
# the right magic and a neighbour's id, a wrong token, then a frame
s.sendall(struct.pack("<III", 0x4c464248, 4, 0) + b"\0" * 16 + b"HBAR" + b"\0" * 28)
s.settimeout(5)
try:
    s.recv(1)  # closed by hibard
except OSError:
    pass
PY
fden=$(stat_of n03 fast_denied)
[ "$fden" -ge 1 ] || fail "fast lane: an intruder was not refused (fast_denied $fden)"
[ "$(stat_of n03 fast_rx)" -eq "$frx3" ] || fail "fast lane: an intruder's frame was taken"
# a connection that says nothing is closed after the 5 s the fast lane waits for its record
python3 - "$fport" <<'PY' || fail "fast lane: a silent connection was not closed in time"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.time()
s.settimeout(30)
try:
    s.recv(1)  # closed by hibard
except OSError:
    pass
sys.exit(0 if 4 <= time.time() - t0 < 25 else 1)
PY
[ "$(stat_of n03 fast_denied)" -eq $((fden + 1)) ] || fail "fast lane: a silent connection not counted"
fden=$((fden + 1))
coll 12 scatter flat 3 100000
echo "data plane plain: $NCOLL collectives ok, $tx frames on it ($ftx on the fast lane, $btx bulk), intruders refused ($denied, fast lane $fden)"
down
check_clean

# coll_bulk_min 0: large collectives on the fast lane too, whose sockets fill (a link then
# refuses data until it drains and tells the senders: hbd_hooks_room); nothing goes bulk
SETS=("${SETS0[@]}" --set data_plane=plain --set coll_bulk_min=0)
NCOLL=0
up
coll 12 scatter flat 5 $((4 << 20))
coll 12 gather flat 2 $((4 << 20))
coll 12 bcast binomial 7 $((8 << 20))
coll 12 allgather flat 0 $((1 << 20))
ftx=0 btx=0 full=0
for ((i = 0; i < 12; i++)); do
    ftx=$((ftx + $(stat_of "$(printf 'n%02d' "$i")" fast_tx)))
    btx=$((btx + $(stat_of "$(printf 'n%02d' "$i")" bulk_tx)))
    full=$((full + $(stat_of "$(printf 'n%02d' "$i")" fast_full)))
done
[ "$ftx" -gt 0 ] && [ "$btx" -eq 0 ] && [ "$full" -gt 0 ] ||
    fail "coll_bulk_min 0: fast_tx $ftx, bulk_tx $btx, fast_full $full"
echo "coll_bulk_min 0: $NCOLL large collectives ok on the fast lane ($ftx frames, $full refused while full)"
down
check_clean
SETS=("${SETS0[@]}")

CONFIG=$src/examples/scmd-30.yaml
NCOLL=0
up
run_all 30 $((1 << 20))
echo "30 daemons: $NCOLL collectives ok"
down
check_clean
echo "PASS: collectives across daemons, every op and algorithm, data checked"
