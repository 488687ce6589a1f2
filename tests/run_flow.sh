#!/bin/bash
# run_flow.sh: rank output under a slow reader (issue 22 item 4). On a 4-node emulated cluster
# one rank per node (the origin's own and three relayed through the daemons' links) writes
# MB lines (LINES lines of 100 bytes each, 96 MB in all); hibar-run's stdout goes into a pipe
# whose reader first reads nothing for a while, then reads in small pieces. The daemons hold
# the output (they stop reading the ranks' pipes, the ranks block in write) instead of
# queueing it: every daemon's rss_kb (hibar-cluster ctl all stats) and hibar-run's resident
# size stay under a bound far below the output's size, and every line arrives, in order per
# rank. Then a job whose reader never reads, and whose hibar-run is killed meanwhile, ends on
# every node with memory still bounded.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
TEST_TAG=flow
HIBAR_TEST_CONFIG=$FOUR
hb_use_cluster
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
LINES=${RUN_FLOW_LINES:-250000} # per rank
BOUND_KB=$((48 * 1024))         # growth allowed over the idle size: half the output
up
rss() { cl ctl all stats | sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' | sort -n | tail -1; }
base=$(rss)
[ -n "$base" ] || fail "no rss_kb in the daemons' stats"
# the reader: nothing for 3 s, then 16 KiB at a time with a pause between
cat >"$TMP/reader.py" <<'PY'
import sys, time
time.sleep(3)
out = open(sys.argv[1], "wb")
while True:
    b = sys.stdin.buffer.read(16384)
    if not b:
        break
    out.write(b)
    time.sleep(0.001)
PY
# each rank: LINES lines "SEQ" padded to 100 bytes
prog="awk -v n=$LINES 'BEGIN { p = sprintf(\"%92s\", \"\"); for (i = 0; i < n; i++) printf \"%07d%s\\n\", i, p }'"
(timeout -k 5 600 "$RUN" --config "$CONFIG" "${SETS[@]}" -n 4 -N 1 -t sh -c "$prog" 2>"$ERR" |
    python3 "$TMP/reader.py" "$OUT") &
job=$!
max=0 runmax=0 samples=0
while kill -0 "$job" 2>/dev/null; do
    r=$(rss)
    [ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r && [ -n "${RUN_FLOW_DEBUG-}" ] && cl ctl all stats | sed 's/ .*rss_kb=/ /'
    rp=$(pgrep -f -- "^$RUN --config $CONFIG" | head -1)
    if [ -n "$rp" ]; then
        r=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$rp/status" 2>/dev/null)
        [ -n "$r" ] && [ "$r" -gt "$runmax" ] && runmax=$r
    fi
    samples=$((samples + 1))
    sleep 0.2
done
wait "$job" || fail "hibar-run or the reader failed"
echo "daemons' rss_kb: idle $base, at most $max during the job ($samples samples);" \
    "hibar-run's at most $runmax KiB; output $(($(wc -c <"$OUT") / 1024)) KiB"
for r in 0 1 2 3; do
    # every line of rank r, in order: the sequence numbers 0 .. LINES-1, each once
    awk -v r="[$r]" -v n="$LINES" '$1 == r { if ($2 + 0 != c) { print "rank " r ": line " c " is " $2; bad = 1; exit 1 } c++ }
        END { if (!bad && c != n) { print "rank " r ": " c " lines of " n; exit 1 } }' "$OUT" ||
        fail "output of rank $r lost or out of order"
done
[ $((max - base)) -le $BOUND_KB ] || fail "a daemon grew by $((max - base)) KiB (bound $BOUND_KB)"
[ "$runmax" -le $BOUND_KB ] || fail "hibar-run grew to $runmax KiB (bound $BOUND_KB)"

# 2. a reader that never reads; hibar-run is killed (SIGKILL) while the output is held: the job
# stops on every node (its ranks are not left blocked in write), memory stays bounded
cp "$(command -v awk)" "$TMP/awk"
mkfifo "$TMP/fifo"
sleep 600 <"$TMP/fifo" &
sp=$!
on_exit 'kill "$sp" 2>/dev/null'
"$RUN" --config "$CONFIG" "${SETS[@]}" -n 4 -N 1 sh -c \
    "$TMP/awk 'BEGIN { p = sprintf(\"%99s\", \"\"); for (;;) print p }'" >"$TMP/fifo" 2>"$ERR" &
rp=$!
wait_for() { # CMD...: until it succeeds (a bound against hangs only: 60 s)
    local i
    for ((i = 0; i < 600; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
running() { [ "$(pgrep -f -c -- "^$TMP/awk")" -eq 4 ]; }
wait_for running || fail "the never-read job's ranks did not start"
sleep 1 # let the output pile up (no assertion on time)
kill -KILL "$rp"
ended() { ! pgrep -f -- "^$TMP/awk" >/dev/null && ! cl jobs | grep -q running; }
wait_for ended || { cl jobs; fail "the job outlived its hibar-run"; }
r=$(rss)
[ $((r - base)) -le $BOUND_KB ] || fail "after the never-read job a daemon is $r KiB (idle $base)"
echo "hibar-run killed under a reader that never reads: the job ended, daemons at most $r KiB"
down
check_clean
echo "PASS: $((4 * LINES)) lines in order under a slow reader, memory bounded"
