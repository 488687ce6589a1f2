#!/usr/bin/env bash
# daemon_garbage.sh: garbage, truncated, oversized and unknown-node frames to a live daemon are
# dropped and counted; a client without the cluster key is refused; barriers go on working.
TEST_TAG=bad
. "$(dirname "$0")/hb_test.sh"
hb_use_cluster
INJECT="$bld/tests/hbd_inject"
[ -x "$INJECT" ] || { echo "SKIP: hbd_inject not built"; exit 77; }
up
cl barrier --count 10 >/dev/null || fail "barriers before"
out=$("$INJECT" --config "$CONFIG" "${SETS[@]}" --target n00 --mode bad) || fail "injector: $out"
echo "injected: $out"
want=$(echo "$out" | sed -n 's/.*expect_bad \([0-9]*\).*/\1/p')
parts=$(echo "$out" | sed -n 's/.*expect_parts \([0-9]*\).*/\1/p')
# the frames are queued in ZeroMQ: give the daemon a bounded while to count them all
for _ in $(seq 100); do
    bad=$(stat_of n00 bad)
    [ "$bad" = "$want" ] && break
    sleep 0.1
done
cl ctl n00 stats
[ "$bad" = "$want" ] || fail "n00 counted $bad malformed frames, expected $want"
[ "$(stat_of n00 bad_parts)" = "$parts" ] || fail "multipart frame not counted"
[ "$(stat_of n00 unknown_peer)" -gt 0 ] || fail "unknown peers not counted"
[ "$(stat_of n00 peers_lost)" = 0 ] || fail "a forged frame made n00 lose a peer"
out=$("$INJECT" --config "$CONFIG" "${SETS[@]}" --target n00 --mode nokey) || fail "injector: $out"
for _ in $(seq 100); do
    denied=$(stat_of n00 auth_denied)
    [ "${denied:-0}" -gt 0 ] && break
    sleep 0.1
done
[ "${denied:-0}" -gt 0 ] || fail "a client without the cluster key was not refused"
[ "$(stat_of n00 bad)" = "$want" ] || fail "frames of a refused client were counted"
out=$(cl barrier --count 100) || { echo "$out"; fail "barriers after the garbage"; }
echo "after: $out"
pgrep -f -- "node n00 .*cluster=$NAME" >/dev/null || pgrep -f -- "cluster=$NAME" >/dev/null || fail "daemon gone"
down
check_clean
echo "PASS: malformed frames dropped and counted, keyless client refused, barriers unaffected"
