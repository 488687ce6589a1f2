#!/bin/bash
# fence_links.sh: a 16-node x 4-rank fence with 64 KiB per rank moves each blob at most once per
# tree edge in each direction: the daemons' per-link fence byte counters (control fence_stats)
# show every node sending up exactly its own blob plus what came from below, and the whole
# concatenation going down every tree edge exactly once, on the plain data plane (stats data_rx);
# small scatters and gathers send each edge only the data below it (xop_trim).
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_prog FC tests/fence_client
hb_prog XC tests/xrank_check
cat > "$TMP/sixteen.yaml" <<YAML
cluster: hbfl$$
nodes: fl[0-15]
chassis:
  - fl[0-3]
  - fl[4-7]
  - fl[8-11]
  - fl[12-15]
protocol: scmd
bootstrap: local
run_dir: /tmp/hibar-$(id -u)-hbfl$$
heartbeat:
  interval_ms: 500
  timeout_ms: 5000
barrier_timeout_ms: 30000
YAML
CL=(env "HIBARD=$HIBARD" "$bld/tools/hibar-cluster" --config "$TMP/sixteen.yaml")
EXTRA_CLEANUP='"${CL[@]}" down >/dev/null 2>&1'
"${CL[@]}" up >/dev/null || fail "cluster did not come up"
run 0 --config "$TMP/sixteen.yaml" -n 64 --per-node 4 "$FC" --size 65536
[ "$(grep -c '^ok rank' "$OUT")" -eq 64 ] || fail "16x4 fence with 64 KiB per rank"
"${CL[@]}" ctl all fence_stats >"$TMP/links" || fail "fence_stats"
cat "$TMP/links"
# per node: NAME: ok PEER:TX_UP:TX_DOWN:RX_UP:RX_DOWN ...
awk '
{ n = $1; sub(":", "", n); up = 0; rxup = 0; parents = 0; rxd = 0
  for (i = 3; i <= NF; i++) {
      split($i, f, ":")
      if (f[2] > 0) { up += f[2]; parents++ }
      rxup += f[4]
      if (f[5] > 0) { rxd = f[5]; nrx++ }
      if (f[3] > 0) { down[++nd] = f[3]; edges_down++ }
  }
  if (parents > 1) { print "node " n " sent up to " parents " nodes"; bad = 1 }
  if (parents == 1) { own = up - rxup; if (own <= 0) { print "node " n ": sent up " up " < received " rxup; bad = 1 } sum += own; ups += up }
  else { root = n; rootown = -rxup }
  if (rxd > 0) T[n] = rxd
}
END {
  for (n in T) { if (total == 0) total = T[n]; if (T[n] != total) { print "release sizes differ"; bad = 1 } }
  sum += total + rootown
  if (sum != total) { print "blobs sent up: " sum " bytes, release " total ": some blob crossed an edge twice"; bad = 1 }
  for (i = 1; i <= nd; i++) if (down[i] != total) { print "an edge carried " down[i] " bytes down, not " total; bad = 1 }
  if (edges_down != 15 || nrx != 15) { print "down edges " edges_down ", receivers " nrx ", expected 15"; bad = 1 }
  printf "release %d bytes down each of %d edges once; up: %d bytes in all (each blob once per edge)\n", total, edges_down, ups
  exit bad
}' "$TMP/links" || fail "per-link bytes"
# A small scatter or gather (data inside the agreement, doc/design.md 7.4): the release that
# goes down each edge carries only what the nodes below it write out. 64 ranks x 256 bytes is
# 16 KiB of data an operation; a port's release carries its 4 ranks' 1 KiB of a scatter (an
# edge with a chassis below it the range that covers all their parts) besides the tables
# (about 2 KiB), and no data of a gather but on the way to the root's node. Without the trim
# every edge would carry the 16 KiB and the tables each time: at least twice what is allowed.
down_bytes() { # per edge "NODE PEER TX_DOWN"
    "${CL[@]}" ctl all fence_stats | awk '{ n = $1; sub(":", "", n)
        for (i = 3; i <= NF; i++) { split($i, f, ":"); print n, f[1], f[3] } }'
}
OPS=20
for op in scatter gather; do
    down_bytes >"$TMP/before" || fail "fence_stats"
    run 0 --config "$TMP/sixteen.yaml" -n 64 --per-node 4 "$XC" --only $op --size 256 --ops $OPS \
        --seed 7
    grep -q "xrank_check: ok $OPS operations on 64 ranks" "$OUT" || fail "$op of 256 bytes a rank"
    down_bytes >"$TMP/after" || fail "fence_stats"
    awk -v op=$op -v ops=$OPS -v whole=16384 '
    NR == FNR { b[$1 " " $2] = $3; next }
    { d = $3 - b[$1 " " $2]; if (d <= 0) next; edges++; sum += d }
    END {
      printf "%s: %d bytes down %d edges for %d operations of %d bytes\n", op, sum, edges, ops, whole
      if (edges != 15) { print "down edges " edges ", expected 15"; bad = 1 }
      if (sum >= edges * ops * whole / 2) { print "the releases were not trimmed"; bad = 1 }
      exit bad
    }' "$TMP/before" "$TMP/after" || fail "$op: trimmed releases"
done
# a job on 3 of the 16 nodes fences through its lowest node (a star): random small operations
run 0 --config "$TMP/sixteen.yaml" -n 12 --per-node 4 "$XC" --max 512 --ops 40 --seed 3
grep -q "xrank_check: ok 40 operations on 12 ranks" "$OUT" || fail "a job on 3 nodes"
# fence data travels on the plain data plane (the default): every node took frames there
"${CL[@]}" ctl all stats >"$TMP/stats" || fail "stats"
n_dp=$(grep -c ' data_rx=[1-9]' "$TMP/stats")
[ "$n_dp" -eq 16 ] || { cat "$TMP/stats"; fail "fence data on the data plane at $n_dp of 16 nodes"; }
"${CL[@]}" down >/dev/null || fail "cluster down"
EXTRA_CLEANUP=:
check_clean
echo "PASS: fence_links"
