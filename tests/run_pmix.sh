#!/bin/bash
# run_pmix.sh: PMIx clients under hibar-run: 1 node x 4 ranks, 4 emulated nodes x 2 ranks
# (fences across nodes through the chassis-tree barrier), job info, placement, output tags.
. "$(dirname "$0")/hb_test.sh"
hb_use_run

# one node (emulated for the job), 4 ranks, 3 fences each
run 0 -n 4 "$HELLO" --fences 3
[ "$(grep -c '^hello rank [0-3] of 4 local_rank [0-3] local_size 4 ' "$OUT")" -eq 4 ] || fail "1x4: job info"
[ "$(grep -c '^bye rank [0-3] after 3 fences' "$OUT")" -eq 4 ] || fail "1x4: fences"
check_clean

# 4 nodes x 2 ranks, block placement: ranks 2k, 2k+1 on rt<k>; every output line tagged
run 0 -n 8 --per-node 2 --tag-output --emulate "$FOUR" "$HELLO" --fences 5
for r in 0 1 2 3 4 5 6 7; do
    grep -q "^\[$r\] hello rank $r of 8 local_rank $((r % 2)) local_size 2 host rt$((r / 2))\$" "$OUT" ||
        fail "4x2: rank $r info/placement"
    grep -q "^\[$r\] bye rank $r after 5 fences" "$OUT" || fail "4x2: rank $r fences"
done
check_clean

# --map-by chassis: ranks dealt round-robin over the nodes of each chassis
run 0 -n 8 --map-by chassis --emulate "$FOUR" "$HELLO" --fences 1
for r in 0 1 2 3 4 5 6 7; do
    host=rt$(( (r / 4) * 2 + r % 2 ))
    grep -q "^hello rank $r of 8 .* host $host\$" "$OUT" || fail "map-by chassis: rank $r not on $host"
done
check_clean

# a job on part of the cluster: 3 ranks on 3 of the 4 nodes, its fences among them only
run 0 -n 3 --emulate "$FOUR" "$HELLO"
[ "$(grep -c '^bye rank' "$OUT")" = 3 ] || fail "a job on 3 of 4 nodes did not end on every rank"
# a program that does not exist: 127
run 127 -n 2 /nonexistent/program
check_clean
# one the daemon cannot execute (its interpreter is missing): the launch fails with the reason
printf '#!/nonexistent/interpreter\n' >"$TMP/badinterp"
chmod +x "$TMP/badinterp"
run 1 -n 2 "$TMP/badinterp"
grep -q "cannot spawn rank 0 of .*: cannot execute $TMP/badinterp: No such file or directory" "$ERR" ||
    fail "the failed exec is not reported with its reason"
check_clean
echo "PASS: run_pmix"
