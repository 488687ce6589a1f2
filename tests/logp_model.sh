#!/usr/bin/env bash
# logp_model.sh: hibar-bench logp measures PlogP(-BR) parameters between the daemons of an
# emulated cluster and caches them; hibar-info --model shows the cached set and the choice;
# hibard's `auto` uses the same file (its reply's prediction is hibar-info's); the logp control
# command refuses bad arguments; a probe (PlogP or T_SR) ends with an error when its peer is lost
# or its daemon stops; hibar-bench lanes adds b_WAN(P) to the same file on a 2-site
# cluster and hibard's auto uses it. No root needed; about 20 s.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
. "$(dirname "$0")/hb_test.sh"
[ -x "$bld/tests/xcoll_drive" ] || { echo "SKIP: tests/xcoll_drive not built"; exit 77; }
DIR=/tmp/hibar-$(id -u)-lm$$
CFG=$DIR/c.yaml
mkdir -p "$DIR" || exit 99
cat >"$CFG" <<EOF
cluster: hibar-lm$$
nodes: n[0-2]
bootstrap: local
run_dir: $DIR/run
EOF
export HIBAR_MODEL_CACHE=$DIR/params.plogp
cl() { "$bld/tools/hibar-cluster" --config "$CFG" "$@"; }
on_exit 'cl down >/dev/null 2>&1; rm -rf "$DIR"'
cl up >/dev/null || fail "cluster up"

out=$("$bld/tools/hibar-bench" logp --config "$CFG" --sizes 0,1K,4K --max-reps 100 --flood 20 --floods 2 --json 2>&1) ||
    { echo "$out"; fail "hibar-bench logp"; }
[ "$(echo "$out" | grep -c '"impl": "rtt"')" -eq 3 ] || { echo "$out"; fail "3 rtt rows expected"; }
[ "$(echo "$out" | grep -c '"impl": "plogp"')" -eq 3 ] || { echo "$out"; fail "3 plogp rows expected"; }
grep -q '^L [0-9]' "$HIBAR_MODEL_CACHE" || fail "no L in the cache file"
[ "$(grep -c '^point ' "$HIBAR_MODEL_CACHE")" -eq 3 ] || fail "3 points expected in the cache file"

info=$("$bld/tools/hibar-info" --config "$CFG" --model --size 1K) || fail "hibar-info --model"
echo "$info" | grep -q "^model parameters: $HIBAR_MODEL_CACHE" || { echo "$info"; fail "hibar-info does not show the file"; }
pred=$(echo "$info" | awk '$1 == "gather" && $2 == 1024 { gsub(/[()]/, "", $(NF - 1)); print $(NF - 1) }')
choice=$(echo "$info" | awk '$1 == "gather" && $2 == 1024 { print $(NF - 2) }')
[ -n "$pred" ] && [ -n "$choice" ] || { echo "$info"; fail "no gather 1024 row"; }

rep=$("$bld/tests/xcoll_drive" --config "$CFG" coll gather auto 0 1024 | head -1) || fail "coll gather auto: $rep"
echo "$rep" | grep -q "alg=$choice " || fail "hibard chose differently from hibar-info ($choice): $rep"
echo "$rep" | grep -q "predicted_us=$pred " || fail "hibard predicted differently from hibar-info ($pred): $rep"
# without the file: the configuration's links (another prediction)
info2=$(HIBAR_MODEL_CACHE=none "$bld/tools/hibar-info" --config "$CFG" --model --size 1K)
echo "$info2" | grep -q "configuration links" || fail "HIBAR_MODEL_CACHE=none still uses a file"

# a probe whose peer dies ends with an error within the heartbeat timeout (not at the client's
# timeout), and a daemon stopped during a probe answers it and stops cleanly (it once freed the
# probe's control connection twice)
pid_of() { cat "$DIR/run/$1.pid"; }
timeout 60 "$bld/tools/hibar-cluster" --config "$CFG" ctl n0 logp 1 65536 100000 flood >"$DIR/lost.out" 2>&1 &
fl=$!
sleep 1
kill -STOP "$(pid_of n1)"
wait $fl
kill -CONT "$(pid_of n1)"
grep -q "err .* node 1 lost during the flood probe" "$DIR/lost.out" ||
    { cat "$DIR/lost.out"; fail "a flood to a stopped node did not end with its loss"; }
timeout 60 "$bld/tools/hibar-cluster" --config "$CFG" ctl n0 logp 2 65536 100000 flood >"$DIR/stop.out" 2>&1 &
fl=$!
sleep 1
p0=$(pid_of n0)
kill -TERM "$p0"
wait $fl
grep -q "err .* daemon stopping" "$DIR/stop.out" || { cat "$DIR/stop.out"; fail "a stopping daemon did not answer its probe"; }
for _ in $(seq 100); do kill -0 "$p0" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$p0" 2>/dev/null || fail "n0 did not stop within 10 s of SIGTERM"
if grep -Eiq "double free|corrupted|abort|sanitizer" "$DIR/run/n0.log"; then
    tail -5 "$DIR/run/n0.log"
    fail "n0 did not stop cleanly"
fi

# b_WAN(P) (hibar-bench lanes) into the same file on a 2-site cluster of the same name: logp's
# part is kept, hibar-info shows the table, hibard's auto uses it (its prediction is hibar-info's,
# which differs from the prediction without the table)
cl down >/dev/null 2>&1
CFG2=$DIR/c2.yaml
printf '%s\n' "cluster: hibar-lm$$" "nodes: m[0-3]" "bootstrap: local" "chassis: 2" \
    "run_dir: $DIR/run2" "sites:" "  - name: a" "    nodes: m[0-1]" "  - name: b" \
    "    nodes: m[2-3]" >"$CFG2"
cl2() { "$bld/tools/hibar-cluster" --config "$CFG2" "$@"; }
cl2 up >/dev/null || fail "2-site cluster up"
on_exit 'cl2 down >/dev/null 2>&1'
out=$("$bld/tools/hibar-bench" lanes --config "$CFG2" --size 256K --reps 2 --json 2>&1) ||
    { echo "$out"; fail "hibar-bench lanes"; }
[ "$(echo "$out" | grep -c '"bench": "lanes"')" -eq 2 ] || { echo "$out"; fail "2 lanes rows expected"; }
[ "$(grep -c '^bwan [12] ' "$HIBAR_MODEL_CACHE")" -eq 2 ] || fail "2 bwan lines expected in the cache file"
[ "$(grep -c '^point ' "$HIBAR_MODEL_CACHE")" -eq 3 ] || fail "hibar-bench lanes lost logp's points"
info=$("$bld/tools/hibar-info" --config "$CFG2" --model --size 1M) || fail "hibar-info --model (2 sites)"
echo "$info" | grep -q "^b_WAN(P): measured" || { echo "$info"; fail "hibar-info does not show the measured b_WAN(P)"; }
row() { awk '$1 == "scatter" && $2 == 1048576 { gsub(/[()]/, "", $(NF - 1)); print $(NF - 2), $(NF - 1); exit }'; }
read -r choice2 pred2 < <(echo "$info" | row)
[ -n "${pred2-}" ] || { echo "$info"; fail "no scatter 1M row"; }
# multi-lane's prediction (the choice may be an algorithm that does not cross on lanes, and then
# the same with and without the table), with the configuration's LAN on both sides: with the
# PlogP points measured on a loaded host the LAN legs can bound multi-lane whatever the WAN
# (CI once: 156933.5 us with and without the table)
mlrow() { awk '$1 == "scatter" && $2 == 1048576 { print $6; exit }'; }
grep -E '^(cluster|nodes|measured|bwan)' "$HIBAR_MODEL_CACHE" >"$DIR/bwan.plogp" # no PlogP set
grep -v '^bwan' "$DIR/bwan.plogp" >"$DIR/nobwan.plogp"
ml2=$(HIBAR_MODEL_CACHE=$DIR/bwan.plogp "$bld/tools/hibar-info" --config "$CFG2" --model --size 1M | mlrow)
ml3=$(HIBAR_MODEL_CACHE=$DIR/nobwan.plogp "$bld/tools/hibar-info" --config "$CFG2" --model --size 1M | mlrow)
[ -n "$ml2" ] && [ "$ml3" != "$ml2" ] || fail "the measured b_WAN(P) does not change multi-lane's prediction ($ml2)"
rep=$("$bld/tests/xcoll_drive" --config "$CFG2" coll scatter auto 0 1048576 | head -1) || fail "coll scatter auto: $rep"
echo "$rep" | grep -q "alg=$choice2 " || fail "hibard chose differently from hibar-info ($choice2): $rep"
echo "$rep" | grep -q "predicted_us=$pred2 " || fail "hibard predicted differently from hibar-info ($pred2): $rep"

# the control command refuses bad input
for bad in "logp" "logp 1 99999 5 rtt" "logp 1 0 0 rtt" "logp 7 0 5 rtt" "logp 0 0 5 rtt" "logp 1 0 5 ping" \
    "logp 1 0 5 rtt 1"; do
    r=$(cl2 ctl m0 $bad 2>&1)
    echo "$r" | grep -q "err -1" || fail "'$bad' not refused: $r"
done
# a T_SR probe (a million ping-pongs) in flight when its daemon stops is answered so too
timeout 60 "$bld/tools/hibar-cluster" --config "$CFG2" ctl m0 tsr 1000000 m1 >"$DIR/stop-tsr.out" 2>&1 &
ts=$!
sleep 1
kill -TERM "$(cat "$DIR/run2/m0.pid")"
wait $ts
grep -q "err tsr .* daemon stopping" "$DIR/stop-tsr.out" ||
    { cat "$DIR/stop-tsr.out"; fail "a stopping daemon did not answer its T_SR probe"; }
echo "PASS: logp rows, cache file, hibar-info --model, hibard auto = $choice at $pred us; b_WAN(P) kept beside PlogP, hibard auto = $choice2 at $pred2 us (multi-lane $ml3 us with the configuration, $ml2 us measured)"
