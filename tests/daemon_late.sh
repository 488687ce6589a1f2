#!/usr/bin/env bash
# daemon_late.sh: a node that arrives 200 ms late holds every other node until it arrives.
TEST_TAG=late
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
for proto in scmd tree; do
    SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR" --set "protocol=$proto")
    up
    # a port of a low-end chassis, a Center and the root Center take turns being late
    for late in n29 n15 n00; do
        out=$(cl barrier --count 3 --late "$late:200") || { echo "$out"; fail "$proto: late $late"; }
        echo "$proto: $out"
        ms=$(echo "$out" | sed -n 's/.*earliest completion \([0-9.]*\) ms.*/\1/p')
        [ -n "$ms" ] || fail "no completion time in: $out"
        awk -v m="$ms" 'BEGIN { exit !(m >= 200) }' ||
            fail "$proto: a node completed $ms ms after the start, before the late $late arrived (200 ms)"
    done
    # a node later than the driver waits (it is never asked): that barrier fails; the next
    # takes a new id (the largest next id of all daemons, not the late one's, which the others
    # hold in flight until the barrier timeout: BUSY) and completes at once
    out=$(cl barrier --late n00:5000 --timeout 300 2>&1) && fail "$proto: a barrier without n00 ended ok: $out"
    echo "$out" | grep -q "^barriers 0 of 1 (ids from [0-9]*; the next got no reply in time), bad 1" ||
        fail "$proto: unexpected: $out"
    out=$(cl barrier --count 2 --timeout 20000) || fail "$proto: the barriers after a failed one: $out"
    echo "$proto: after a failed barrier: $out"
    down
    check_clean
done
echo "PASS: nobody completes before the late node arrives"
