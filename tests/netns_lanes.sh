#!/usr/bin/env bash
# netns_lanes.sh: hibar-bench lanes on a 2 x 3 WAN test bed (lanes capped at 100 Mbit/s, the WAN
# at 250): b_WAN(P) for P = 1..3 through the daemons, the aggregate growing with P up to the
# total cap (each within 50% of min(P x 100, 250)), the table in the cluster's parameter file,
# and hibar-info --model showing it as measured. Needs root (skip 77 otherwise); about 20 s.
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
bench=$bld/tools/hibar-bench
LANE=100 TOTAL=250

. "$(dirname "$0")/hb_test.sh"

# ---- inside the bed (the script re-runs itself as the bed's COMMAND) ----
if [ "${1-}" = --inside ]; then
    cl=$2
    export HIBAR_MODEL_CACHE=$HIBAR_TESTBED_DIR/params.plogp
    out=$HIBAR_TESTBED_DIR/rows
    "$bench" lanes -o "cluster=$cl" --json --size 1M --reps 2 >"$out" || { cat "$out"; fail "hibar-bench lanes failed"; }
    cat "$out" "$HIBAR_MODEL_CACHE"
    # the rows: P = 1..3, the aggregate within 50% of min(P x lane, total), growing up to the cap
    awk -v lane=$LANE -v total=$TOTAL '
        /"bench": "lanes"/ {
            match($0, /"lanes": [0-9]+/); P = substr($0, RSTART + 9, RLENGTH - 9) + 0
            match($0, /"sum_mbit": [0-9.]+/); s[P] = substr($0, RSTART + 12, RLENGTH - 12) + 0
            n++
        }
        END {
            if (n != 3) { print "want 3 rows, got " n; exit 1 }
            for (P = 1; P <= 3; P++) {
                want = P * lane < total ? P * lane : total
                if (s[P] < 0.5 * want || s[P] > 1.5 * want) { printf "P %d: %.1f Mbit/s, want %d +-50%%\n", P, s[P], want; exit 1 }
            }
            if (!(s[2] > 1.3 * s[1])) { printf "2 lanes (%.1f) not above 1 lane (%.1f)\n", s[2], s[1]; exit 1 }
        }' "$out" || fail "b_WAN(P) rows"
    [ "$(grep -c '^bwan [123] [0-9.]*$' "$HIBAR_MODEL_CACHE")" -eq 3 ] || fail "3 bwan lines expected in the cache"
    grep -q "^cluster $cl\$" "$HIBAR_MODEL_CACHE" || fail "the cache does not name cluster $cl"
    # hibar-info --model: the measured table, the same values as the file
    info=$("$bld/tools/hibar-info" --config "$HIBAR_TESTBED_CONFIG" -o "cluster=$cl" --model --size 4M) ||
        fail "hibar-info --model"
    echo "$info"
    echo "$info" | grep -q "^b_WAN(P): measured (hibar-bench lanes)" || fail "hibar-info does not show the measured table"
    echo "$info" | grep -q "measured b_WAN(P)" || fail "hibar-info's choice does not use the measured table"
    b1=$(awk '$1 == "bwan" && $2 == 1 { printf "%.1f", $3 }' "$HIBAR_MODEL_CACHE")
    echo "$info" | awk -v b="$b1" '$1 == 1 && $2 == b { f = 1 } END { exit !f }' ||
        fail "hibar-info's b_WAN(1) is not the file's ($b1)"
    json=$("$bld/tools/hibar-info" --config "$HIBAR_TESTBED_CONFIG" -o "cluster=$cl" --model --json --size 4M)
    echo "$json" | grep -q '"bwan_source": "measured"' || fail "hibar-info --json: no measured b_WAN(P)"
    # another cluster's file is not used
    other=$("$bld/tools/hibar-info" --config "$HIBAR_TESTBED_CONFIG" -o "cluster=$cl-x" --model --size 4M)
    echo "$other" | grep -q "^b_WAN(P): configuration" || fail "another cluster's table was used"
    echo "PASS: b_WAN(P) measured, cached and shown"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
[ -x "$bench" ] || { echo "SKIP: $bench not built"; exit 77; }
# one site: refused before any daemon starts
one=$(mktemp /tmp/hibar-lanes-XXXXXX.yaml) || exit 99
on_exit 'rm -f "$one"'
printf 'cluster: ln-one%s\nbootstrap: local\nnodes: n[0-1]\nrun_dir: /tmp/hibar-ln-one%s\n' $$ $$ >"$one"
msg=$("$bench" lanes --config "$one" 2>&1) && fail "lanes on one site succeeded"
echo "$msg" | grep -q "needs two sites" || fail "one site: $msg"
"$tb" --name "lt$$" --net "${HIBAR_TEST_NET:-10.243}" --sites 2 --nodes 3 --lane-mbit $LANE \
    --total-mbit $TOTAL -- "$0" --inside "ln-t$$"
