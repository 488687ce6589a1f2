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
    down
    check_clean
done
echo "PASS: nobody completes before the late node arrives"
