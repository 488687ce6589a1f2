#!/bin/bash
# daemon_fds.sh: a daemon out of file descriptors (prlimit --nofile 64, flooded with control
# connections that stay open) refuses the surplus ones at once (their clients see the end, none
# is left hanging),
# says so once in its log, keeps serving the connections it has, and serves new ones again once
# descriptors are free.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
command -v prlimit >/dev/null || { echo "SKIP: no prlimit"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
NAME=hbfd$$
RD=/tmp/hibar-$(id -u)-$NAME
cat >"$TMP/one.yaml" <<YAML
cluster: $NAME
nodes: fd0
bootstrap: local
run_dir: $RD
YAML
prlimit --nofile=64:64 "$HIBARD" --config "$TMP/one.yaml" --node fd0 -f -l info \
    >"$TMP/fd0.log" 2>&1 &
dp=$!
stop_fd0() {
    kill -TERM "$dp" 2>/dev/null
    wait "$dp" 2>/dev/null
    rm -rf "$RD" /dev/shm/hibar-"$(id -u)"-"$NAME"-*
}
EXTRA_CLEANUP=stop_fd0
for _ in $(seq 100); do [ -S "$RD/fd0.sock" ] && break; sleep 0.1; done
[ -S "$RD/fd0.sock" ] || { cat "$TMP/fd0.log"; fail "daemon fd0 did not start"; }
ctl() { "$bld/tools/hibar-cluster" --config "$TMP/one.yaml" ctl fd0 "$@"; }
ctl ping | grep -q 'ok pong' || fail "no answer before the flood"
# 100 connections held open by one process; the daemon has room for fewer than 64
python3 - "$RD/fd0.sock" >"$TMP/flood.out" <<'PY'
import select, socket, sys, time
held, stuck = [], 0
for i in range(100):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    # a full backlog answers EAGAIN: try again until the daemon drains it; one that never
    # accepts never does: a bound (not a measurement; a loaded machine gets 30 s), after which
    # the rest count as stuck too
    until = time.time() + 30
    while True:
        try:
            s.connect(sys.argv[1])
            break
        except BlockingIOError:
            if time.time() > until:
                s = None
                break
            time.sleep(0.01)
    if s is None:
        stuck = 100 - i
        break
    s.setblocking(True)
    held.append(s)
time.sleep(1.0)
state = {}
for s in held:  # a refused connection reads its end; an accepted one answers ping
    try:
        s.sendall(b"ping\n")
    except OSError:
        state[s] = "ended"
deadline = time.time() + 60  # a bound against hangs; done as soon as all have answered
while len(state) < len(held) and time.time() < deadline:
    rd, _, _ = select.select([s for s in held if s not in state], [], [], 0.5)
    for s in rd:
        try:
            r = s.recv(100)
        except OSError:
            r = b""
        state[s] = "answered" if r else "ended"
ended = sum(v == "ended" for v in state.values())
answered = sum(v == "answered" for v in state.values())
print("ended", ended, "hung", len(held) - len(state) + stuck, "answered", answered)
PY
cat "$TMP/flood.out"
ended=$(sed -n 's/^ended \([0-9]*\) .*/\1/p' "$TMP/flood.out")
hung=$(sed -n 's/.* hung \([0-9]*\) .*/\1/p' "$TMP/flood.out")
answered=$(sed -n 's/.* answered \([0-9]*\)$/\1/p' "$TMP/flood.out")
[ "${ended:-0}" -gt 0 ] || fail "no connection was refused: the limit did not bite"
[ "${answered:-0}" -gt 0 ] || fail "no connection was served during the flood"
[ "${hung:-1}" -eq 0 ] || fail "$hung connections were left hanging (neither served nor refused)"
n=$(grep -c "refusing connections until descriptors are free again" "$TMP/fd0.log")
[ "$n" -eq 1 ] || { cat "$TMP/fd0.log"; fail "out of descriptors logged $n times, not once"; }
kill -0 "$dp" 2>/dev/null || { cat "$TMP/fd0.log"; fail "the daemon died"; }
ctl ping | grep -q 'ok pong' || fail "no answer after the flood"
echo "PASS: daemon_fds"
