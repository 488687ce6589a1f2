#!/usr/bin/env bash
# sim_cli.sh: hibar-sim end to end: JSON rows equal the paper's formula, traces, calibration errors (exit 2, file:line), plots.
set -u
. "$(dirname "$0")/hb_test.sh"
sim="$top_builddir/tools/hibar-sim"
ex="$top_srcdir/examples"
[ -x "$sim" ] || { echo "sim_cli: $sim not built"; exit 99; }
command -v python3 >/dev/null 2>&1 || { echo "sim_cli: python3 missing, skip"; exit 77; }
tmp=$(mktemp -d /tmp/hibar-simcli.XXXXXX) || exit 99
on_exit 'rm -rf "$tmp"'
failed=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; failed=1; }
unset HIBAR_CONFIG HIBAR_FANOUT HIBAR_PROTOCOL HIBAR_NODES HIBAR_CHASSIS

# the paper's 30-node cluster from its config file, constant costs, no sender gap: formula
"$sim" barrier --config "$ex/scmd-30.yaml" --t-ib 2.5 --t-sr 60 --gap 0 --json -q \
    > "$tmp/b.json" || bad "barrier exit"
python3 - "$tmp/b.json" <<'PY' && ok "scmd-30: predicted = formula, both protocols" || bad "scmd-30 rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert {r["impl"] for r in rows} == {"scmd", "tree"}, rows
for r in rows:
    assert r["bench"] == "sim-barrier" and r["nodes"] == 30 and r["L"] == 1, r
    assert abs(r["predicted_us"] - r["formula_us"]) < 1e-6, r
want = {"scmd": 7 * 2.5 + 6 * 60, "tree": 5 * 2.5 + 4 * 60}
for r in rows:
    assert abs(r["predicted_us"] - want[r["impl"]]) < 1e-6, r
PY

# a trace: 30 COMPLETE records, each node's actions in program order
"$sim" barrier --nodes 30 --fanout 0 --protocol tree --trace "$tmp/t.trace" -q > /dev/null ||
    bad "trace exit"
n=$(grep -c ' COMPLETE' "$tmp/t.trace")
[ "$n" -eq 30 ] && ok "trace: 30 COMPLETE records" || bad "trace: $n COMPLETE records"
grep -q '^n0 coll 0 ARRIVE' "$tmp/t.trace" && ok "trace: hb_hier_rec_format lines" ||
    bad "trace format"

# calibration: a malformed line is named, exit 2
printf '{"bench": "tsr", "median_us": 70}\n{"bench": "tsr", "median_us": }\n' > "$tmp/bad.json"
"$sim" barrier --nodes 30 --calibrate "$tmp/bad.json" -q > /dev/null 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "bad.json:2:" "$tmp/err" && ok "calibration: exit 2, file:line" ||
    bad "calibration error (exit $rc: $(cat "$tmp/err"))"
"$sim" barrier --nodes 30 --t-sr -5 -q > /dev/null 2>&1
[ $? -eq 2 ] && ok "bad flag: exit 2" || bad "bad flag accepted"

# calibrated run uses the rows' figures
printf '{"bench": "cluster-barrier", "impl": "scmd", "nodes": 30, "median_us": 900, "t_ib_us": 10, "t_sr_us": 100}\n' \
    > "$tmp/cb.json"
"$sim" barrier --config "$ex/scmd-30.yaml" --calibrate "$tmp/cb.json" --gap 0 --protocol scmd \
    --json -q > "$tmp/c.json" || bad "calibrated exit"
python3 - "$tmp/c.json" <<'PY' && ok "calibrated: T_IB 10, T_SR 100" || bad "calibrated row"
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["t_ib_us"] == 10 and r["t_sr_us"] == 100 and abs(r["predicted_us"] - 670) < 1e-6, r
PY
"$sim" validate --config "$ex/scmd-30.yaml" --calibrate "$tmp/cb.json" --gap 0 -q > "$tmp/v.txt"
[ $? -eq 1 ] && grep -q 'NO' "$tmp/v.txt" && ok "validate: 670 vs 900 is outside 15%, exit 1" ||
    bad "validate"

# the host model's CPU level from the rows: a control command and its reply cost the ping
# round's share, the protocol's costs are scaled so that the barrier uses the rows' CPU
{
    printf '{"bench": "host", "impl": "scmd", "nodes": 30, "cores": 2, "t_sr_us": 60, "t_ib_us": 50, "msg_cpu_us": 12, "io_cpu_us": 24, "ib_cpu_us": 20, "ctl_cpu_us": 6, "wake_us": 0}\n'
    printf '{"bench": "cluster-barrier", "impl": "scmd", "nodes": 30, "median_us": 4000, "protocol_median_us": 3000, "t_ib_us": 60, "t_sr_us": 70, "cpu_per_barrier_us": 6000, "cpu_per_ping_us": 900, "arrive_spread_us": 500}\n'
} > "$tmp/host.json"
"$sim" validate --config "$ex/scmd-30.yaml" --calibrate "$tmp/host.json" --json -q > "$tmp/vh.json"
[ $? -le 1 ] || bad "validate with host rows: exit"
python3 - "$tmp/vh.json" <<'PY' && ok "validate: CPU level and arrival spread from the rows" || bad "host level"
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["host_model"] and r["cores"] == 2, r
assert abs(r["ctl_cpu_us"] - 900 / 60) < 1e-6, r          # 30 commands + 30 replies
assert abs(r["cpu_busy_us"] - 6000) < 6, r                 # the rows' CPU per barrier
s = r["cpu_scale"]
assert s > 1 and abs(r["msg_cpu_us"] / 12 - s) < 0.002 and abs(r["ib_cpu_us"] / 20 - s) < 0.002, r
assert r["cpu_per_barrier_us"] == 6000, r
PY

# scatter on 2 x 8 nodes: every row present, multi-lane beats single-lane at 1 MiB
"$sim" scatter --nodes 16 --size 1048576 --lanes 2,4 --json -q > "$tmp/s.json" || bad "scatter exit"
python3 - "$tmp/s.json" <<'PY' && ok "scatter: rows and multi-lane speed-up" || bad "scatter rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
sc = [r for r in rows if r["bench"] == "sim-scatter"]
algs = {r["impl"] for r in sc}
assert algs == {"single-lane", "multi-lane", "flat", "binomial"}, algs
best = [r for r in sc if r["best"]]
assert len(best) == 1 and best[0]["impl"] == "multi-lane" and best[0]["speedup"] > 1.2, best
PY

# a job on part of the cluster: fewer members, the formula of the pruned tree, never slower
"$sim" barrier --nodes 3000 --fanout 4 --protocol tree --gap 0 --json -q > "$tmp/w.json" &&
    "$sim" barrier --nodes 3000 --fanout 4 --protocol tree --gap 0 --json -q --members 10% \
        > "$tmp/m.json" || bad "--members exit"
python3 - "$tmp/w.json" "$tmp/m.json" <<'PY' && ok "--members 10%: pruned tree, formula" || bad "--members rows"
import json, sys
w = json.loads(open(sys.argv[1]).readline())
m = json.loads(open(sys.argv[2]).readline())
assert w["members"] == 3000 and 200 < m["members"] < 400, (w, m)
assert abs(m["predicted_us"] - m["formula_us"]) < 1e-6 and m["L"] <= w["L"], (w, m)
assert m["predicted_us"] <= w["predicted_us"], (w, m)
PY
"$sim" barrier --nodes 30 --members 150% -q > /dev/null 2>&1
[ $? -eq 2 ] && ok "--members 150% -> 2" || bad "--members 150% not refused with 2"

# plots, when gnuplot is here
if command -v gnuplot >/dev/null 2>&1; then
    "$sim" barrier --sweep 100,300 --fanouts 0,2 --plot "$tmp/plot" -q > /dev/null 2>&1
    [ -s "$tmp/plot/barrier.png" ] && [ -s "$tmp/plot/barrier.gp" ] && ok "plot: barrier.png" ||
        bad "plot"
else
    echo "skip plot: no gnuplot"
fi
exit $failed
