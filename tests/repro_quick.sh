#!/usr/bin/env bash
# repro_quick.sh: hibar-bench reproduce --quick (issue 25) writes every section of the report
# with its rows (section 4's A/B all-to-all, section 5's simulated alltoall and, with the bed,
# the collectives' validation among them), and the report's numbers come from the run: two runs (the second without the
# namespace bed), each section with measured or simulated rows, none of them equal to the
# papers' figures, live measurements differing between the runs, and the report's cells the
# rows' values. No time is asserted. As root the first run also measures the 2-site bed
# and the 1-site bed of section 4's queue probe (tests/netns/testbed, hibar-rpq<pid>a-* and
# hibar-rpq<pid>aq-*, torn down on exit). About 1-2 minutes.
TEST_TAG=rpq
. "$(dirname "$0")/hb_test.sh"
BENCH=$bld/tools/hibar-bench
[ -x "$BENCH" ] && [ -x "$bld/tools/hibar-sim" ] && [ -x "$bld/daemon/hibard" ] ||
    { echo "SKIP: hibar-bench, hibar-sim or hibard not built"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 missing"; exit 77; }
TMP=$(mktemp -d /tmp/hibar-rpq.XXXXXX) || exit 99
NAME=rpq$$
cleanup() {
    local w
    for w in a b; do
        if [ "$(id -u)" -eq 0 ]; then
            "$src/tests/netns/testbed" --cleanup --name "$NAME$w" >/dev/null 2>&1
            "$src/tests/netns/testbed" --cleanup --name "$NAME${w}q" >/dev/null 2>&1
        fi
        [ ! -f "$TMP/$w/four.yaml" ] ||
            "$bld/tools/hibar-cluster" --config "$TMP/$w/four.yaml" down >/dev/null 2>&1
        "$bld/tools/hibar-cluster" --config "$src/examples/scmd-30.yaml" \
            --set "cluster=hibar-$NAME$w-v" --set "run_dir=$TMP/$w/vrun" down >/dev/null 2>&1
    done
    rm -rf "$TMP"
}
on_exit cleanup
on_fail 'tail -n 40 "$TMP"/*.err'
mkdir -p "$TMP/a" "$TMP/b" || exit 99

"$BENCH" reproduce --quick --name "${NAME}a" --work-dir "$TMP/a" --out "$TMP/a.md" \
    --rows "$TMP/a.rows" 2>"$TMP/a.err" || fail "reproduce --quick exit $?"
"$BENCH" reproduce --quick --no-bed --name "${NAME}b" --work-dir "$TMP/b" --out "$TMP/b.md" \
    --rows "$TMP/b.rows" 2>"$TMP/b.err" || fail "reproduce --quick --no-bed exit $?"

python3 - "$TMP" "$(id -u)" <<'PY' || fail "the report"
import math, re, sys
tmp, uid = sys.argv[1], int(sys.argv[2])

def rows(path):
    out = []
    for line in open(path):
        sec, src, key, val = line.split()
        out.append((int(sec), src, key, float(val)))
    return out

runs = {w: rows(f"{tmp}/{w}.rows") for w in "ab"}
mds = {w: open(f"{tmp}/{w}.md").read() for w in "ab"}
paper = {(s, v) for s, src, k, v in runs["a"] if src == "paper"}
assert paper == {(s, v) for s, src, k, v in runs["b"] if src == "paper"}, "paper table differs"
for w in "ab":
    md, rs = mds[w], runs[w]
    for sec in range(1, 6):
        assert re.search(rf"^## {sec}\. ", md, re.M), f"run {w}: no section {sec}"
        own = [r for r in rs if r[0] == sec and r[1] != "paper" and math.isfinite(r[3])]
        assert own, f"run {w}: section {sec} has no measured or simulated rows"
        # nothing measured or simulated is one of the paper's figures of its section
        for s, src, k, v in own:
            assert (s, v) not in paper or v in (0.0, 1.0, 2.0, 3.0, 4.0), \
                f"run {w}: {k} = {v} is a paper figure"
    keys = {k for s, src, k, v in rs}
    for k in ("center_n2_us", "port_n2_us", "t_ib_us", "hockney_alpha_us", "L_us",
              "sim_scmd_100000_us", "model_popt_1048576", "validate_scmd_us",
              "a2a_emu_flat_1024_us", "a2a_emu_pairwise_1024_us", "a2a_emu_pred_flat_1024_us",
              "sim_alltoall_flat_100_1024_us", "sim_alltoall_pairwise_100_1024_us"):
        assert k in keys, f"run {w}: no row {k}"
    # the report's cells are the rows' values
    v = {k: val for s, src, k, val in rs}
    assert f"T_IB = {v['t_ib_us']:.2f} us" in md, "T_IB of the rows not in the report"
    assert f"alpha = {v['hockney_alpha_us']:.1f} us" in md, "Hockney alpha not in the report"
    assert "2.37" in md and "3.86" in md, "the paper's chassis figures are not quoted"
    # section 4's A/B all-to-all: the measured cells of the table are the rows'
    for m in (1024, 65536):
        a, b = v[f"a2a_emu_flat_{m}_us"], v[f"a2a_emu_pairwise_{m}_us"]
        assert f"| {m} | {a:.0f} | {b:.0f} | {a / b:.2f} |" in md, f"A/B row {m} not in the report"
# live measurements differ between the two runs
a = {k: v for s, src, k, v in runs["a"] if src == "measured"}
b = {k: v for s, src, k, v in runs["b"] if src == "measured"}
common = [k for k in a if k in b]
assert len(common) >= 10, common
differ = [k for k in common if a[k] != b[k]]
assert len(differ) >= 3, f"two runs measured the same numbers: {common}"
# simulations on fixed parameters are deterministic: the same in both runs (the barrier ones
# take the measured T_IB and T_SR)
sa = {k: v for s, src, k, v in runs["a"] if src == "sim"}
sb = {k: v for s, src, k, v in runs["b"] if src == "sim"}
fixed = [k for k in sa if k.startswith(("sim_scatter_", "sim_gather_", "sim_gain", "sim_alltoall_"))]
assert fixed, "no multi-lane simulation rows"
for k in fixed:
    assert sa[k] == sb.get(k), f"simulation {k} differs: {sa[k]} {sb.get(k)}"
# the bed (root): section 2 measured its P sweep in run a, not in run b
bed_a = [k for k in a if k.startswith("bed_scatter_P")]
if uid == 0 and "Not run" not in mds["a"].split("### Measured on the namespace bed")[1][:200]:
    assert len(bed_a) >= 4, bed_a
assert not [k for k in b if k.startswith("bed_")], "run b used the bed"
# with the bed, section 5 validated hibar-sim's collectives against section 2's rows
if bed_a:
    assert "validate_coll_within" in a, "no collective validation against the bed"
print(f"ok: {len(runs['a'])} and {len(runs['b'])} rows; {len(differ)} of {len(common)} "
      f"measured cells differ between the runs; bed rows {len(bed_a)}")
PY
