#!/bin/bash
# fence_links.sh: a 16-node x 4-rank fence with 64 KiB per rank moves each blob at most once per
# tree edge in each direction: the daemons' per-link fence byte counters (control fence_stats)
# show every node sending up exactly its own blob plus what came from below, and the whole
# concatenation going down every tree edge exactly once, on the plain data plane (stats data_rx).
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_prog FC tests/fence_client
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
# fence data travels on the plain data plane (the default): every node took frames there
"${CL[@]}" ctl all stats >"$TMP/stats" || fail "stats"
n_dp=$(grep -c ' data_rx=[1-9]' "$TMP/stats")
[ "$n_dp" -eq 16 ] || { cat "$TMP/stats"; fail "fence data on the data plane at $n_dp of 16 nodes"; }
"${CL[@]}" down >/dev/null || fail "cluster down"
EXTRA_CLEANUP=:
check_clean
echo "PASS: fence_links"
