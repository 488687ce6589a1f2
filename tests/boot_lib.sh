# boot_lib.sh: what the bootstrap tests share inside the bed (sourced by boot_ompi.sh and
# boot_slurm.sh; they set run_dir, name and hibard).

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
