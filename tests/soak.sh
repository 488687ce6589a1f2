#!/bin/bash
# soak.sh: nothing grows without bound (issue "Survive faults", doc/design.md section 5.1). On an
# emulated 4-node cluster, jobs of libhibar barriers (hibar-lib-bench) and of PMIx fences with
# data (fence_client, 256 B per rank) run one after the other; after a warm-up job of each kind
# every daemon's resident size (rss_kb in its stats) is taken, and after all of them it must be
# within 5 % of it (plus 1 MiB for the allocator's rounding). A memory bound, not a time bound.
#
#   soak.sh [--barriers N] [--fences N] [--jobs K]
# CI runs the short default (20,000 barriers and 2,000 fences in 4 jobs each); the soak the
# README names: top_builddir=_build/normal tests/soak.sh --barriers 1000000 --fences 100000
# --jobs 100 (5.5 minutes on 2 cores: every daemon +1.7 to +3.5 %).
. "$(dirname "$0")/hb_test.sh"
BARRIERS=20000 FENCES=2000 JOBS=4
while [ $# -gt 0 ]; do
    case $1 in
    --barriers) BARRIERS=$2; shift 2 ;;
    --fences) FENCES=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "usage: soak.sh [--barriers N] [--fences N] [--jobs K]" >&2; exit 2 ;;
    esac
done
hb_use_run
TEST_TAG=sk
HIBAR_TEST_CONFIG=$FOUR
hb_use_cluster
hb_prog LB tools/peer/hibar-lib-bench
hb_prog FC tests/fence_client
up
NODES=$(sed -n 's/^nodes: *//p' "$CONFIG")
R() { run 0 --config "$CONFIG" "${SETS[@]}" -n 8 -N 2 "$@"; }
barriers() { R "$LB" --bench barrier --iters "$1" --warmup 0 --max-secs 100000 >/dev/null; }
fences() {
    R "$FC" --size 256 --iters "$1"
    grep -q "^fence size=256 ranks=8 .*iters=$1" "$OUT" || fail "no result from $1 fences"
}
# rss of every daemon: "NODE KB" lines
rss() { cl ctl all stats | sed -n 's/^\([^:]*\): ok .* rss_kb=\([0-9]*\).*/\1 \2/p'; }

barriers $((BARRIERS / JOBS / 4 + 1))
fences $((FENCES / JOBS / 4 + 1))
rss >"$TMP/rss0"
[ "$(wc -l <"$TMP/rss0")" -eq 4 ] || { cat "$TMP/rss0"; fail "not 4 daemons' rss"; }
for ((j = 0; j < JOBS; j++)); do
    barriers $((BARRIERS / JOBS))
    fences $((FENCES / JOBS))
done
rss >"$TMP/rss1"
echo "rss_kb after warm-up, after $BARRIERS barriers and $FENCES fences in $JOBS jobs each:"
join "$TMP/rss0" "$TMP/rss1" | tee "$TMP/rss" |
    awk '{ printf "  %s %s -> %s (%+.1f %%)\n", $1, $2, $3, ($3 - $2) * 100 / $2 }'
awk '$3 > $2 * 1.05 + 1024 { bad = 1; print "FAIL: " $1 " grew from " $2 " to " $3 " kB" }
     END { exit bad }' "$TMP/rss" >&2 || fail "a daemon's resident size grew"
down
check_clean
echo "PASS: soak ($NODES)"
