#!/usr/bin/env bash
# logp_model.sh: hibar-bench logp measures PlogP(-BR) parameters between the daemons of an
# emulated cluster and caches them; hibar-info --model shows the cached set and the choice;
# hibard's `auto` uses the same file (its reply's prediction is hibar-info's); the logp control
# command refuses bad arguments. No root needed; about 15 s.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
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
trap 'cl down >/dev/null 2>&1; rm -rf "$DIR"' EXIT
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

# the control command refuses bad input
for bad in "logp" "logp 1 99999 5 rtt" "logp 1 0 0 rtt" "logp 7 0 5 rtt" "logp 0 0 5 rtt" "logp 1 0 5 ping" \
    "logp 1 0 5 rtt 1"; do
    r=$(cl ctl n0 $bad 2>&1)
    echo "$r" | grep -q "err -1" || fail "'$bad' not refused: $r"
done
echo "PASS: logp rows, cache file, hibar-info --model, hibard auto = $choice at $pred us"
