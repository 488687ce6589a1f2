#!/usr/bin/env bash
# trace_replay.sh: hibard's recorded hier events (HIBAR_TRACE_DIR) replayed through hibar-sim's
# driver give the daemons' actions line by line (scmd-30 and a 12-node cluster, both
# protocols), and after a node is killed; a corrupted action line or a missing one is reported (issue 10 item 4).
TEST_TAG=trace
. "$(dirname "$0")/hb_test.sh"
TMP=$(mktemp -d /tmp/hibar-trace.XXXXXX) || exit 99
on_exit 'rm -rf "$TMP"'
hb_use_cluster # cl, up, down; the cluster (CONFIG, SETS set below) is stopped on exit, first
SIM="$bld/tools/hibar-sim"
unset HIBAR_CONFIG HIBAR_FANOUT HIBAR_PROTOCOL HIBAR_NODES HIBAR_CHASSIS HIBAR_TRACE_DIR
[ -x "$SIM" ] || { echo "SKIP: hibar-sim not built"; exit 77; }

# traced CONFIG PROTO COUNT: a traced cluster, COUNT barriers, stopped; traces in $TMP/$tag
traced() {
    local cfg=$1 proto=$2 count=$3 tag
    tag="$(basename "$cfg" .yaml)-$proto"
    CONFIG=$cfg
    SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR" --set "protocol=$proto")
    mkdir -p "$TMP/$tag"
    HIBAR_TRACE_DIR="$TMP/$tag" cl up >/dev/null || fail "$tag: cluster did not come up"
    out=$(cl barrier --count "$count") || { echo "$out"; fail "$tag: $count barriers"; }
    echo "$out" | grep -q "^barriers $count (ids from 0), bad 0" || fail "$tag: $out"
    down # a sanitizer report in a daemon log fails the test
    # every daemon traced every barrier's COMPLETE
    local n f bad=0
    n=$(ls "$TMP/$tag"/n*.trace | wc -l)
    for f in "$TMP/$tag"/n*.trace; do
        [ "$(grep -c ' COMPLETE ' "$f")" -eq "$count" ] || { echo "$f: not $count COMPLETE"; bad=1; }
    done
    [ $bad -eq 0 ] || fail "$tag: traces incomplete"
    # the replay: every node the same
    out=$("$SIM" replay --config "$cfg" --set "protocol=$proto" --trace-dir "$TMP/$tag" -q)
    rc=$?
    echo "$tag: $n daemons; $out"
    [ $rc -eq 0 ] || fail "$tag: replay exit $rc"
    echo "$out" | grep -q "^replay: $n of $n nodes" || fail "$tag: replay: $out"
    LAST=$TMP/$tag
}

for cfg in "$src/examples/scmd-30.yaml" "$src/examples/local.yaml"; do
    for proto in scmd tree; do
        traced "$cfg" "$proto" 10
    done
done

# a node killed during a barrier: PEER_LOST and the FAIL actions replay too
CONFIG="$src/examples/local.yaml"
SETS=(--set "cluster=$NAME" --set "run_dir=$RUN_DIR" --set "protocol=scmd")
mkdir -p "$TMP/kill"
HIBAR_TRACE_DIR="$TMP/kill" cl up >/dev/null || fail "kill: cluster did not come up"
cl barrier --count 3 >/dev/null || fail "kill: 3 barriers"
cl barrier --count 1 --kill n05:0 --expect -4 >/dev/null || fail "kill: barrier with n05 killed"
cl down >/dev/null || fail "kill: down"
grep -q ' PEER_LOST from n5 ' "$TMP/kill/n0.trace" && grep -q ' FAIL -4 ' "$TMP/kill/n0.trace" ||
    fail "kill: no PEER_LOST / FAIL in n0.trace"
out=$("$SIM" replay --config "$CONFIG" --set protocol=scmd --trace-dir "$TMP/kill" -q) ||
    fail "kill: replay: $out"
echo "local-scmd, n05 killed: $out"

# it can fail: one action line changed (a chassis-barrier phase), on a copy of the last traces
cp -r "$LAST" "$TMP/bad"
f="$TMP/bad/n5.trace"
ln=$(grep -n ' HWB_ARRIVE ' "$f" | sed -n 3p | cut -d: -f1)
[ -n "$ln" ] || fail "no HWB_ARRIVE line in $f"
sed -i "${ln}s/ phase \([0-9]\)/ phase 9/" "$f"
out=$("$SIM" replay --config "$src/examples/local.yaml" --set protocol=tree --trace-dir "$TMP/bad" -q)
rc=$?
echo "corrupted n5.trace:$ln: exit $rc: $(echo "$out" | grep DIFFERS)"
[ $rc -eq 1 ] || fail "a corrupted action line replays with exit $rc"
echo "$out" | grep -q "^n5 .*DIFFERS .*n5.trace:$ln: .*phase 9" || fail "difference not reported: $out"
[ "$(echo "$out" | grep -c DIFFERS)" -eq 1 ] || fail "other nodes differ: $out"

# an action missing (the daemon never completed a barrier the events complete)
cp "$LAST/n5.trace" "$f"
ln=$(grep -n ' COMPLETE ' "$f" | sed -n 4p | cut -d: -f1)
sed -i "${ln}d" "$f"
out=$("$SIM" replay --config "$src/examples/local.yaml" --set protocol=tree --trace-dir "$TMP/bad" -q)
rc=$?
echo "n5.trace without line $ln: exit $rc: $(echo "$out" | grep DIFFERS)"
[ $rc -eq 1 ] && echo "$out" | grep -q 'daemon: "(nothing)", simulator: "n5 coll 3 COMPLETE' ||
    fail "a missing COMPLETE is not reported: $out"

# a trace of another cluster is refused (exit 2), not compared
"$SIM" replay --config "$src/examples/scmd-30.yaml" --trace-dir "$LAST" -q >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && grep -q "does not fit the topology" "$TMP/err" || fail "wrong topology: exit $rc"
echo "PASS: daemon traces replay through hibar-sim's driver (scmd-30, local; scmd, tree)"
