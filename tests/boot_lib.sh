# boot_lib.sh: what the bootstrap tests share (sourced by boot_ompi.sh and boot_slurm.sh; they
# set name first, and hibard inside the bed).

run_dir=/tmp/hibar-$(id -u)-$name

fail() { echo "FAIL: $*" >&2; exit 1; }

# outside, after the bed: nothing of the cluster may be left (daemons, run dir, namespaces);
# exits with rc
bed_done() {
    local rc=$1 left
    left=$(pgrep -f -- "cluster=$name" || true)
    if [ -n "$left" ] || [ -e "$run_dir" ]; then
        [ -n "$left" ] && kill -KILL $left 2>/dev/null
        rm -rf "$run_dir"
        [ "$rc" -eq 0 ] && fail "daemons or run dir left behind"
    fi
    [ -z "$(ip netns list 2>/dev/null | grep "hibar-$name-")" ] || fail "namespaces left"
    # chassis-barrier segments of daemons that were killed (a SIGKILLed Center cannot unlink)
    rm -f /dev/shm/hibar-"$(id -u)"-"$name"-*
    exit "$rc"
}

# stop the cluster's daemons: SIGTERM, then SIGKILL a second later
stop_daemons() {
    local left
    left=$(pgrep -f -- "cluster=$name" || true)
    [ -n "$left" ] && kill -TERM $left 2>/dev/null && sleep 1
    left=$(pgrep -f -- "cluster=$name" || true)
    [ -z "$left" ] || kill -KILL $left 2>/dev/null
}

# wait (bounded) until the cluster file lists n nodes and every daemon has its socket
wait_up() {
    local n=$1
    for _ in $(seq 1 100); do
        if [ -f "$run_dir/cluster.yaml" ] && [ "$(grep -c '^  - {name:' "$run_dir/cluster.yaml")" -eq "$n" ] &&
            [ "$(ls "$run_dir"/*.sock 2>/dev/null | wc -l)" -eq "$n" ]; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# wait (bounded, 15 s) until no hibard of the cluster is left
wait_gone() {
    for _ in $(seq 1 75); do
        [ -z "$(pgrep -f -- "$hibard .*cluster=$name" || true)" ] && return 0
        sleep 0.2
    done
    return 1
}
