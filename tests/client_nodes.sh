#!/bin/bash
# client_nodes.sh: libhibar across nodes under hibar-run: every operation's data checked with
# random sizes and roots on 1 node x 8 ranks, 4 emulated nodes x 4 ranks (block and chassis
# placement), 3 of 4 nodes and 30 emulated nodes x 1 rank, the small ones' data inside the
# agreement and not; collectives of rank sets across nodes; misuse reported on every rank; a buffer the daemon cannot write fails the nodes that
# wait on it at once; a rank that dies ends the job with its name, never a hang.
. "$(dirname "$0")/hb_test.sh"
hb_use_run

cp "$bld/tests/xrank_check" "$TMP/xrank_check" || { echo "SKIP: xrank_check not built"; exit 77; }
XC="$TMP/xrank_check"
HELLO=$XC # what check_clean looks for

ok() { grep -q "^xrank_check: ok $1 operations on $2 ranks" "$OUT" || fail "$3: no success line"; }

# one node, 8 ranks on 2 cores: the segment only (the daemon is not involved after start-up)
run 0 -n 8 "$XC" --ops 60 --errors --seed 1
ok 60 8 "1x8"
check_clean

# 4 nodes x 4 ranks, block placement: epochs handed to the daemons, data between them; half
# of the subset barriers among one node's ranks (run on the node alone)
run 0 -n 16 --per-node 4 --emulate "$FOUR" "$XC" --ops 60 --errors --unreadable --block 4 --seed 2
ok 60 16 "4x4"
check_clean

# a rank whose receive buffer is read-only, on a node that forwards the others' data (a
# binomial scatter): its failure reaches the node below it at once, and the barrier after it
# completes (before, that node waited out the collective timeout and the barrier timed out)
HIBAR_COLL_ALG=binomial run 0 -n 16 --per-node 4 --emulate "$FOUR" "$XC" --ops 20 --unwritable \
    --seed 9
ok 20 16 "4x4 binomial, a read-only receive buffer"
check_clean

# ranks dealt round-robin over each chassis: a node's ranks are not consecutive; the data
# between the daemons on the encrypted links (data_plane curve; the cases above use plain)
run 0 -n 16 --map-by chassis -o data_plane=curve --emulate "$FOUR" "$XC" --ops 40 --seed 3
ok 40 16 "4x4 map-by chassis, data_plane curve"
check_clean

# the data inside the agreement (coll_inline_max) for every form without -v up to 16 KiB a
# rank (16 ranks: 256 KiB), non-consecutive ranks per node; and for none (every collective
# with a data run); misuse reported on every rank either way
run 0 -n 16 --map-by chassis -o coll_inline_max=262144 --emulate "$FOUR" "$XC" --ops 60 --errors \
    --unreadable --seed 6 --max 16384
ok 60 16 "4x4 map-by chassis, coll_inline_max 256 KiB"
check_clean
run 0 -n 16 --per-node 4 -o coll_inline_max=0 --emulate "$FOUR" "$XC" --ops 60 --errors \
    --unreadable --seed 7
ok 60 16 "4x4, coll_inline_max 0"
check_clean

# every collective's data through ZeroMQ's I/O threads (coll_bulk_min 1; 3 of them), none
# inside the agreement: the fast lane carries only the agreements and tokens
run 0 -n 16 --map-by chassis -o coll_inline_max=0 -o coll_bulk_min=1 -o data_threads=3 \
    --emulate "$FOUR" "$XC" --ops 60 --errors --unreadable --seed 8
ok 60 16 "4x4 map-by chassis, coll_bulk_min 1, data_threads 3"
check_clean

# the data run after the agreement, not beside it (coll_overlap off): the output still goes
# to the ranks segment by segment as it arrives
run 0 -n 12 --per-node 3 -o coll_overlap=off -o coll_inline_max=0 --emulate "$FOUR" "$XC" \
    --ops 40 --errors --seed 9
ok 40 12 "4x3, coll_overlap off"
check_clean

# a job on 3 of the 4 nodes, node 0 not among them: every operation, the large ones by data
# runs over the job's nodes (an allgather's schedule once named node 0 as its root: INVAL)
run 0 -n 6 -H 'rt[1-3]' --emulate "$FOUR" "$XC" --ops 30 --seed 11 --max 262144
ok 30 6 "3 of 4 nodes"
run 0 -n 6 -H 'rt[1-3]' --emulate "$FOUR" "$XC" --ops 3 --only allgather --size 200000 --seed 12
ok 3 6 "3 of 4 nodes, allgather by a data run"
check_clean

# 30 nodes x 1 rank (the paper's 10 chassis x 3)
sed -e "s/^cluster: .*/cluster: hbxc$$/" "$src/examples/scmd-30.yaml" >"$TMP/thirty.yaml"
grep -q "^cluster: hbxc$$" "$TMP/thirty.yaml" || echo "cluster: hbxc$$" >>"$TMP/thirty.yaml"
run 0 -n 30 --emulate "$TMP/thirty.yaml" "$XC" --ops 30 --seed 4 --max 262144
ok 30 30 "30x1"
check_clean

# a rank that dies in the middle: hibar-run names it and exits with its status, nobody hangs
run 3 -n 8 --per-node 2 --emulate "$FOUR" "$XC" --ops 1000 --die-rank 5 --die-at 7 --seed 5
grep -q "rank 5" "$ERR" || fail "dead rank not named"
# ... and when its end is reported after the failures it caused (a child of it holds its output
# 1.5 s): its status all the same, not theirs
run 3 -n 8 --per-node 2 --emulate "$FOUR" "$XC" --ops 1000 --die-rank 5 --die-at 7 --seed 5 \
    --die-linger 1500
grep -q "rank [0-46-7] .*exited with status 1" "$ERR" || fail "no failure after the dead rank's"
check_clean
echo "PASS: client_nodes"
