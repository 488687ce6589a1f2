#!/usr/bin/env bash
# netns_xcoll_bench.sh: hibar-bench scatter|gather|alltoall across the daemons of a 2 x 2 WAN test
# bed: JSON rows (impl, lanes, predicted_us, CI) and the WAN lanes really used (the bed's counters).
# Needs root (skip 77 otherwise) and python3 (to read the JSON). The daemons check the data of
# every collective themselves (a row exists only if every daemon said check=ok).
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${top_builddir:-$src}
tb=$src/tests/netns/testbed
bench=$bld/tools/hibar-bench
name=xb$$

. "$(dirname "$0")/hb_test.sh"

# ---- inside the bed (the script re-runs itself as the bed's COMMAND) ----
if [ "${1-}" = --inside ]; then
    out=$HIBAR_TESTBED_DIR/rows
    plots=$HIBAR_TESTBED_DIR/plots
    # 256 KiB per node: a lane of 100 Mbit/s carries it in about 20 ms
    "$bench" scatter --json --sizes 256K --alg flat,single-lane,multi-lane --sweep-lanes \
        --sweep-size 256K --min-reps 2 --max-reps 2 --plot "$plots" >"$out.scatter" ||
        fail "hibar-bench scatter failed"
    "$bench" gather --json --sizes 256K --alg single-lane,multi-lane --lanes 2 --min-reps 2 \
        --max-reps 2 >"$out.gather" || fail "hibar-bench gather failed"
    # alltoall, flat and pairwise, across the bed's hosts (its WAN in the middle)
    "$bench" alltoall --json --sizes 64K --min-reps 2 --max-reps 2 >"$out.alltoall" ||
        fail "hibar-bench alltoall failed"
    cat "$out.scatter" "$out.gather" "$out.alltoall"
    python3 - "$out.alltoall" <<'EOF' || fail "alltoall rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [r["impl"] for r in rows] == ["flat", "pairwise"], rows
for r in rows:
    assert (r["bench"], r["nodes"], r["size"], r["reps"]) == ("alltoall", 4, 65536, 2), r
    assert 0 < r["min_us"] <= r["median_us"] <= r["max_us"] and r["predicted_us"] > 0, r
EOF
    # hibar-info --model: the same model, T(P) for every P and the choice
    HIBAR_MODEL_CACHE=none "$bld/tools/hibar-info" --config "$HIBAR_TESTBED_CONFIG" --json --model --size 256K \
        >"$out.info" || fail "hibar-info --model failed"
    python3 - "$out.scatter" "$out.gather" "$out.info" <<'EOF' || exit 1
import json, sys
def rows(path):
    return [json.loads(l) for l in open(path) if l.strip()]
sc, ga = rows(sys.argv[1]), rows(sys.argv[2])
bad = []
def check(r, bench, impl, lanes, busy):
    want = {"bench": bench, "impl": impl, "lanes": lanes, "nodes": 4, "ranks": 4, "size": 262144,
            "n0": 2, "n1": 2, "reps": 2, "wan_lanes_busy": busy}
    for k, v in want.items():
        if r.get(k) != v:
            bad.append("%s %s lanes %s: %s is %r, want %r" % (bench, impl, lanes, k, r.get(k), v))
    for k in ("median_us", "min_us", "max_us", "predicted_us", "ci_us", "cpu_ms"):
        if not isinstance(r.get(k), (int, float)) or r[k] < 0:
            bad.append("%s %s: %s is %r" % (bench, impl, k, r.get(k)))
    if not r["min_us"] <= r["median_us"] <= r["max_us"] or r["predicted_us"] <= 0:
        bad.append("%s %s: inconsistent times %r" % (bench, impl, r))
    # multi-lane rows carry the paper's T(P) beside the pipelined model's prediction
    if (impl == "multi-lane") != isinstance(r.get("formula_us"), (int, float)) or \
            (impl == "multi-lane" and r["formula_us"] <= 0):
        bad.append("%s %s lanes %s: formula_us is %r" % (bench, impl, lanes, r.get("formula_us")))
size_rows = [r for r in sc if not r["sweep"]]
sweep = [r for r in sc if r["sweep"]]
if [r["impl"] for r in size_rows] != ["flat", "single-lane", "multi-lane"] or len(sweep) != 2:
    bad.append("scatter rows: %r" % [(r["impl"], r["lanes"], r["sweep"]) for r in sc])
else:
    # flat: the root's 2 WAN messages go to 2 remote nodes: 2 lanes; single-lane: 1;
    # multi-lane at the model's P_opt (2 here) and the sweep's P = 1, 2: P lanes
    check(size_rows[0], "scatter", "flat", 0, 2)
    check(size_rows[1], "scatter", "single-lane", 1, 1)
    check(size_rows[2], "scatter", "multi-lane", 2, 2)
    check(sweep[0], "scatter", "multi-lane", 1, 1)
    check(sweep[1], "scatter", "multi-lane", 2, 2)
if [r["impl"] for r in ga] != ["single-lane", "multi-lane"]:
    bad.append("gather rows: %r" % [r["impl"] for r in ga])
else:
    check(ga[0], "gather", "single-lane", 1, 1)
    check(ga[1], "gather", "multi-lane", 2, 2)
m = json.load(open(sys.argv[3]))["model"]
c = [c for c in m["choices"] if c["op"] == "scatter" and c["size"] == 262144]
tp = dict(enumerate(c[0].get("t_p_us", []), 1)) if c else {}
if (m["n0"], m["n1"], sorted(tp)) != (2, 2, [1, 2]) or tp[2] >= tp[1]:
    bad.append("hibar-info --model: %r" % m)
elif sweep:
    for r in sweep:  # the bench's predicted T(P) is hibar-info's (one decimal in the rows)
        if abs(r["predicted_us"] - tp[r["lanes"]]) > 0.1:
            bad.append("T(%d): bench %r, hibar-info %r" % (r["lanes"], r["predicted_us"], tp[r["lanes"]]))
    if abs(size_rows[0]["predicted_us"] - c[0]["flat_us"]) > 0.1:
        bad.append("flat: bench %r, hibar-info %r" % (size_rows[0]["predicted_us"], c[0]["flat_us"]))
for b in bad:
    print("FAIL:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
    if command -v gnuplot >/dev/null; then
        [ -s "$plots/scatter-lanes.svg" ] && [ -s "$plots/scatter-lanes.png" ] ||
            fail "no P-sweep plot in $plots"
        grep -q "predicted (pipelined lanes)" "$plots/scatter-lanes.gp" &&
            grep -q "paper T(P)" "$plots/scatter-lanes.gp" || fail "the plot lacks a prediction"
    fi
    exit 0
fi

# ---- outside: build the bed and run the above inside it ----
[ "$(id -u)" -eq 0 ] || { echo "netns_xcoll_bench: needs root; skipping" >&2; exit 77; }
command -v python3 >/dev/null || { echo "netns_xcoll_bench: no python3; skipping" >&2; exit 77; }
[ -x "$bench" ] || { echo "netns_xcoll_bench: $bench not built" >&2; exit 99; }
export top_srcdir=$src top_builddir=$bld
"$tb" --name "$name" --sites 2 --nodes 2 -- "$0" --inside
rc=$?
ip netns list 2>/dev/null | grep -q "^hibar-$name-" && fail "bed hibar-$name left behind"
exit $rc
