#!/usr/bin/env bash
# daemon_barrier.sh: 1,000 consecutive barriers with each protocol on the emulated 30-daemon
# cluster; every daemon completes every barrier; clean stop leaves nothing behind.
TEST_TAG=bar
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
# scmd and tree on the fast lane (the default), and tree with barrier tokens on ZeroMQ
for proto in scmd tree tree-zmq; do
    SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR" --set "protocol=${proto%-zmq}")
    [ "$proto" = tree-zmq ] && SETS+=(--set fast_lane=off)
    up
    cl status >/dev/null || fail "$proto: status says not every daemon is ready"
    out=$(cl barrier --count 1000) || { echo "$out"; fail "$proto: 1000 barriers"; }
    echo "$proto: $out"
    echo "$out" | grep -q "^barriers 1000 (ids from 0), bad 0" || fail "$proto: unexpected: $out"
    # every daemon counted 1000 completed barriers and no malformed frame
    stats=$(cl ctl all stats)
    n=$(echo "$stats" | grep -c " barriers=1000 failed=0 ")
    [ "$n" -eq 30 ] || { echo "$stats"; fail "$proto: $n of 30 daemons report 1000 barriers"; }
    echo "$stats" | grep -q " bad=0 " || fail "$proto: malformed frames counted"
    [ "$(echo "$stats" | grep -c ' bad=0 ')" -eq 30 ] || fail "$proto: malformed frames counted"
    [ "$(echo "$stats" | grep -c ' hier_drop=0 ')" -eq 30 ] || { echo "$stats"; fail "$proto: protocol messages dropped"; }
    # each daemon reports its resident size (the way to watch libpmix's leak, hibard(8))
    [ "$(echo "$stats" | grep -cE ' rss_kb=[1-9][0-9]*( |$)')" -eq 30 ] || { echo "$stats"; fail "$proto: rss_kb missing"; }
    # the tokens went where they should: the fast lane (chassis ports of scmd send none), or
    # ZeroMQ alone with fast_lane off
    nfast=$(echo "$stats" | grep -cE ' fast_tx=[1-9]')
    if [ "$proto" = tree-zmq ]; then
        [ "$nfast" -eq 0 ] || fail "$proto: $nfast daemons used the fast lane"
    else
        [ "$nfast" -ge 1 ] || { echo "$stats"; fail "$proto: no daemon sent on the fast lane"; }
    fi
    [ "$(echo "$stats" | grep -c ' fast_bad=0 fast_denied=0 ')" -eq 30 ] || { echo "$stats"; fail "$proto: fast lane frames refused"; }
    down
    check_clean
done
echo "PASS: 1000 barriers with scmd and with tree on 30 daemons (fast lane), and tree on ZeroMQ"
