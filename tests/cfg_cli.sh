#!/usr/bin/env bash
# cfg_cli.sh: hibar-info on the examples (JSON checked with python3) and on bad configs (exit 2, file:line).
set -u
. "$(dirname "$0")/hb_test.sh"
info="$top_builddir/tools/hibar-info"
ex="$top_srcdir/examples"
bad="$top_srcdir/tests/configs"
[ -x "$info" ] || { echo "cfg_cli: $info not built"; exit 99; }
command -v python3 >/dev/null 2>&1 || { echo "cfg_cli: python3 missing, skip"; exit 77; }
tmp=$(mktemp -d /tmp/hibar-cfgcli.XXXXXX) || exit 99
on_exit 'rm -rf "$tmp"'
failed=0
unset HIBAR_CONFIG HIBAR_FANOUT HIBAR_PROTOCOL HIBAR_NODES HIBAR_CHASSIS

# check NAME PYTHON-ASSERTIONS < JSON: the document is `d`
check() {
    name=$1; shift
    if python3 -c "import json,sys
d = json.load(sys.stdin)
$1" ; then echo "ok   $name"; else echo "FAIL $name"; failed=1; fi
}

"$info" --config "$ex/scmd-30.yaml" --json --t-ib 2.5 --t-sr 120 > "$tmp/scmd.json" || { echo "FAIL scmd-30 exit"; failed=1; }
check "scmd-30: the paper's cluster" '
roles = [c["role"] for c in d["chassis"]]
assert d["n_nodes"] == 30 and d["n_chassis"] == 10 and d["n_sites"] == 1, d
assert roles.count("root") == 1 and roles.count("inter-level") == 3 and roles.count("low-end") == 6, roles
assert d["chassis"][0]["children"] == [1, 2, 3]
assert d["chassis"][0]["nodes"] == ["n00", "n01", "n02"] and d["chassis"][0]["center"] == "n00"
for c in (1, 2, 3):
    assert len(d["chassis"][c]["children"]) == 2 and d["chassis"][c]["depth"] == 1
assert d["chassis"][4]["parent"] == 1 and d["chassis"][4]["parent_node"] == "n04"
assert d["L"] == 1 and d["depth"] == 2
n12 = d["nodes"][12]
assert n12["center"] is True and n12["parent"] == "n04" and n12["chassis"] == 4
assert d["nodes"][13]["port_index"] == 1 and d["nodes"][13]["parent"] is None
p = d["predictions"]
assert abs(p["scmd_us"] - (7 * 2.5 + 6 * 120)) < 1e-9 and abs(p["tree_us"] - (5 * 2.5 + 4 * 120)) < 1e-9
assert d["protocol"] == "scmd" and d["fanout"] == 0 and d["cluster"] == "scmd30"
assert "libyaml" in d["dependencies"] and d["version"]
' < "$tmp/scmd.json"

"$info" --config "$ex/two-site.yaml" --json > "$tmp/two.json" || { echo "FAIL two-site exit"; failed=1; }
check "two-site: 2 sites x 8 nodes, chassis of 4" '
assert d["n_nodes"] == 16 and d["n_sites"] == 2 and d["n_chassis"] == 4
assert [s["name"] for s in d["sites"]] == ["tokyo", "osaka"] and len(d["sites"][1]["nodes"]) == 8
site = {n["name"]: n["site"] for n in d["nodes"]}
for c in d["chassis"]:
    assert len(c["nodes"]) == 4 and len({site[x] for x in c["nodes"]}) == 1 and c["site"] == site[c["center"]]
assert d["links"]["wan"]["lane_bandwidth_mbps"] == 250 and d["links"]["wan"]["total_bandwidth_mbps"] == 1000
' < "$tmp/two.json"

"$info" --config "$ex/local.yaml" --json > "$tmp/local.json" || { echo "FAIL local exit"; failed=1; }
check "local: 12 nodes, 4 chassis of 3, 2 sites" '
assert d["n_nodes"] == 12 and d["n_chassis"] == 4 and d["n_sites"] == 2 and d["bootstrap"] == "local"
assert all(len(c["nodes"]) == 3 for c in d["chassis"])
assert all(n["address"] == "127.0.0.1" and n["port"] == 0 for n in d["nodes"])
b = {x["name"]: x for x in d["backends"]}
assert set(b) == {"shm", "scic"} and b["scic"]["priority"] > b["shm"]["priority"], b
assert b["shm"]["available"] is True and b["scic"]["why"], b
assert d["scic"]["vendor"] == "0x1b5c" and d["scic"]["device"] == "0x5c1c", d["scic"]
' < "$tmp/local.json"

# Overrides: flag over environment over file.
HIBAR_FANOUT=1 HIBAR_PROTOCOL=tree "$info" -c "$ex/scmd-30.yaml" -o fanout=4 --json > "$tmp/over.json" || { echo "FAIL override exit"; failed=1; }
check "overrides: -o fanout=4 beats HIBAR_FANOUT=1; HIBAR_PROTOCOL=tree beats the file" '
assert d["fanout"] == 4 and d["protocol"] == "tree"
assert d["chassis"][0]["children"] == [1, 2, 3, 4]
' < "$tmp/over.json"

# Text output.
if "$info" -c "$ex/scmd-30.yaml" | grep -q "topology:   10 chassis, depth 2, L 1"; then echo "ok   text output"; else echo "FAIL text output"; failed=1; fi

# Bad configs: exit 2, one line FILE:LINE:COLUMN: ... 'value'.
while read -r file where what; do
    out=$("$info" --config "$bad/$file" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -qF "$bad/$file:$where: " &&
        printf '%s\n' "$out" | grep -qF "$what" && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]; then
        echo "ok   $file -> $where $what"
    else
        echo "FAIL $file: exit $rc, got: $out (want $where and $what)"; failed=1
    fi
done <<'LIST'
bad-unknown-key.yaml 3:1 'fanuot'
bad-wrong-type.yaml 2:9 'many'
bad-wrong-type-map.yaml 3:3 'protocol'
bad-enum.yaml 2:11 'ring'
bad-hostlist.yaml 2:8 'n[00-'
bad-dup-node.yaml 3:5 duplicate node 'n2'
bad-two-chassis.yaml 4:5 node in two chassis 'n2'
bad-two-sites.yaml 6:12 node in two sites 'n3'
bad-chassis-33.yaml 2:10 mask width (32) '33'
bad-chassis-list-33.yaml 3:5 'n[00-32]'
bad-empty-nodes.yaml 2:1 empty node list 'nodes'
bad-empty.yaml 1:1 empty file
bad-dup-key.yaml 3:1 duplicate key 'fanout'
bad-unknown-chassis-node.yaml 4:5 'n6'
bad-nested-unknown.yaml 4:5 'links.lan.bw'
bad-syntax.yaml 2:12 YAML syntax error
no-such-file.yaml 0:0 cannot read file
LIST

# Bad overrides and usage also exit 2.
for args in "-o fanout=x" "-o nosuchkey=1" "--t-ib 3" "--t-ib -1 --t-sr 2" "--bogus"; do
    # shellcheck disable=SC2086
    "$info" $args >/dev/null 2>&1
    rc=$?
    if [ $rc -eq 2 ]; then echo "ok   hibar-info $args -> 2"; else echo "FAIL hibar-info $args -> $rc"; failed=1; fi
done
HIBAR_PROTOCOL=ring "$info" >/dev/null 2>"$tmp/env.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "environment HIBAR_PROTOCOL" "$tmp/env.err"; then echo "ok   bad env"; else echo "FAIL bad env ($rc)"; failed=1; fi

# A job's view: --members prunes the tree to the members' chassis; stand-in Centers; errors.
"$info" --config "$top_srcdir/examples/local.yaml" --members 'n[04-05,08]' --json > "$tmp/m.json"
rc=$?
if [ $rc -eq 0 ] && python3 - "$tmp/m.json" <<'PY'; then echo "ok   --members view"; else echo "FAIL --members view ($rc)"; failed=1; fi
import json, sys
d = json.load(open(sys.argv[1]))
assert d["n_members"] == 3 and d["n_active_chassis"] == 2, d
kept = [c for c in d["chassis"] if c["center"] is not None]
assert [c["center"] for c in kept] == ["n04", "n08"], kept  # n04, n08: stand-ins
assert kept[0]["role"] == "root" and kept[1]["parent_node"] == "n04", kept
assert kept[0]["mask"] == 6, kept  # ports 1 and 2 of chassis n03..n05
assert sum(n["member"] for n in d["nodes"]) == 3
PY
"$info" --config "$top_srcdir/examples/local.yaml" --members 'n[04-05,08]' | grep -q "C\*   n04" ||
    { echo "FAIL --members text: no stand-in mark"; failed=1; }
"$info" --config "$top_srcdir/examples/local.yaml" --members 'n[04,99]' >/dev/null 2>"$tmp/m.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "unknown node 'n99'" "$tmp/m.err"; then echo "ok   --members unknown node -> 2"; else echo "FAIL --members unknown node ($rc)"; failed=1; fi

exit $failed
