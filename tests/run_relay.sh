#!/bin/bash
# run_relay.sh: launch forwarding's JOB frames from a cluster member (CurveZMQ key, a neighbour's routing id) to a live daemon: malformed ones are refused by the decoder and counted (bad), well-formed ones that fit no job are dropped and counted (relay_drop); frames of a stale incarnation are dropped and counted (bad_inc); the daemon goes on serving.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
INJECT="$bld/tests/hbd_inject"
[ -x "$INJECT" ] || { echo "SKIP: hbd_inject not built"; exit 77; }
NAME=hbrl$$
RD=/tmp/hibar-$(id -u)-$NAME
# two nodes, one chassis: rl1 is rl0's neighbour but never starts; the injector speaks as rl1
cat >"$TMP/two.yaml" <<YAML
cluster: $NAME
nodes: rl[0-1]
bootstrap: local
run_dir: $RD
YAML
"$HIBARD" --config "$TMP/two.yaml" --node rl0 -f -l info >"$TMP/rl0.log" 2>&1 &
dp=$!
stop_rl0() {
    kill -TERM "$dp" 2>/dev/null
    wait "$dp" 2>/dev/null
    rm -rf "$RD" /dev/shm/hibar-"$(id -u)"-"$NAME"-*
}
EXTRA_CLEANUP=stop_rl0
for _ in $(seq 100); do [ -S "$RD/rl0.sock" ] && [ -f "$RD/rl0.port" ] && break; sleep 0.1; done
[ -f "$RD/rl0.port" ] || { cat "$TMP/rl0.log"; fail "daemon rl0 did not start"; }
stats() { "$bld/tools/hibar-cluster" --config "$TMP/two.yaml" ctl rl0 stats; }
stat_of() { stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
out=$("$INJECT" --config "$TMP/two.yaml" --target rl0 --mode job --as rl1) || fail "injector: $out"
echo "injected: $out"
want_bad=$(echo "$out" | sed -n 's/.*expect_bad \([0-9]*\).*/\1/p')
want_drop=$(echo "$out" | sed -n 's/.*expect_drop \([0-9]*\).*/\1/p')
[ "${want_bad:-0}" -gt 0 ] && [ "${want_drop:-0}" -gt 0 ] || fail "injector output: $out"
for _ in $(seq 100); do
    [ "$(stat_of bad)" = "$want_bad" ] && [ "$(stat_of relay_drop)" = "$want_drop" ] && break
    sleep 0.1
done
stats
[ "$(stat_of bad)" = "$want_bad" ] || fail "rl0 counted $(stat_of bad) malformed frames, expected $want_bad"
[ "$(stat_of relay_drop)" = "$want_drop" ] || fail "rl0 dropped $(stat_of relay_drop) JOB frames, expected $want_drop"
[ "$(stat_of relay_jobs)" = 0 ] || fail "a job record was left behind"
# incarnations: after rl1's HELLO, a frame of another incarnation and a HELLO of an older one
# are dropped and counted (bad_inc), the rest of the stats unmoved
out=$("$INJECT" --config "$TMP/two.yaml" --target rl0 --mode inc --as rl1) || fail "injector: $out"
echo "injected: $out"
want_inc=$(echo "$out" | sed -n 's/.*expect_inc \([0-9]*\).*/\1/p')
[ "${want_inc:-0}" -eq 2 ] || fail "injector output: $out"
for _ in $(seq 100); do
    [ "$(stat_of bad_inc)" = "$want_inc" ] && break
    sleep 0.1
done
stats
[ "$(stat_of bad_inc)" = "$want_inc" ] ||
    fail "rl0 counted $(stat_of bad_inc) stale frames, expected $want_inc"
[ "$(stat_of bad)" = $((want_bad + want_inc)) ] || fail "rl0 counted other frames as malformed"
kill -0 $dp 2>/dev/null || { cat "$TMP/rl0.log"; fail "daemon gone"; }
"$bld/tools/hibar-cluster" --config "$TMP/two.yaml" ctl rl0 ping | grep -q 'ok pong' || fail "daemon does not answer"
echo "PASS: run_relay"
