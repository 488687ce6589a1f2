#!/bin/bash
# mpi_xover_file.sh: crossovers measured by hibar-bench reach the component. hibar-bench mpi
# --crossover FILE (a short run on one node: 2 ranks, the barrier and gather at two sizes)
# writes the entries of the one-node regime into FILE, a file of MCA parameters, keeping its
# other lines; Open MPI (ompi_info, with the build tree's component) and hibar-info --mpi read
# the same values from it, by file, with the environment over the file. HOME is the test's own
# (a user's $HOME/.openmpi/mca-params.conf is not read). Skipped (77) when the component or
# mpirun is missing. Whatever the figures, only the file's shape and the readers' agreement are
# checked: the sizes hibar wins at depend on the machine and its load.
. "$(dirname "$0")/hb_test.sh"
hb_use_run
hb_use_mpi
command -v ompi_info >/dev/null || { echo "SKIP: no ompi_info (apt-get install openmpi-bin)"; exit 77; }
[ -x "$bld/tools/hibar-bench" ] && [ -x "$bld/tools/peer/hibar-mpi-bench" ] ||
    { echo "SKIP: hibar-bench or hibar-mpi-bench not built"; exit 77; }
export HOME=$TMP/home
mkdir -p "$HOME/.openmpi" || exit 99
unset OMPI_MCA_mca_base_param_files OMPI_MCA_mca_param_files
X=$TMP/xover.conf
printf '# a site file\nbtl_tcp_if_include = lo\ncoll_hibar_gather_min_node = 3\ncoll_hibar_gather_min_nodes = 12345\n' >"$X"

timeout -k 10 600 "$bld/tools/hibar-bench" mpi -n 2 --bench barrier,gather --sizes 8,64K --reps 1 \
    --no-mpirun --crossover "$X" -- --max-secs 0.2 --min-iters 5 >"$OUT" 2>"$ERR" ||
    fail "hibar-bench mpi --crossover: exit $?"
grep -q "^# crossover gather one node: hibar takes " "$OUT" || fail "no crossover line for gather"
grep -q "^# crossovers of one node written to $X" "$OUT" || fail "no line saying where they went"
# the file: the other lines kept, the one-node entries replaced, once each
grep -qx "btl_tcp_if_include = lo" "$X" || fail "a line of another parameter was lost"
grep -qx "coll_hibar_gather_min_nodes = 12345" "$X" || fail "another regime's entry was lost"
for p in coll_hibar_barrier_max_node coll_hibar_gather_min_node coll_hibar_gather_max_node; do
    [ "$(grep -c "^$p = -\{0,1\}[0-9]*$" "$X")" -eq 1 ] || fail "$p not once in $X"
done
grep -q "^# hibar-bench mpi: gather node: .* 65536:" "$X" || fail "no comment with the medians"
! grep -qx "coll_hibar_gather_min_node = 3" "$X" || fail "the old entry was kept"
# a second run replaces its entries again, never doubles them
timeout -k 10 600 "$bld/tools/hibar-bench" mpi -n 2 --bench gather --sizes 8,64K --reps 1 \
    --no-mpirun --crossover "$X" -- --max-secs 0.2 --min-iters 5 >"$OUT" 2>"$ERR" ||
    fail "hibar-bench mpi --crossover, again: exit $?"
[ "$(grep -c "^coll_hibar_gather_min_node = " "$X")" -eq 1 ] || fail "an entry doubled"
[ "$(grep -c "^# hibar-bench mpi: gather node:" "$X")" -eq 1 ] || fail "a comment doubled"
grep -q "^coll_hibar_barrier_max_node = " "$X" || fail "the first run's barrier entry was lost"

# the readers agree: Open MPI (ompi_info with this component) and hibar-info --mpi
export OMPI_MCA_mca_base_param_files=$X
export OMPI_MCA_mca_base_component_path="$(ompi_info --path pkglibdir --parsable |
    sed -n 's/^path:pkglibdir://p'):$HIBAR_OMPI_COMPONENT_DIR"
ompi_info --param coll hibar --level 9 --parsable >"$TMP/ompi" 2>&1 || fail "ompi_info: exit $?"
"$bld/tools/hibar-info" --mpi --json >"$TMP/info" || fail "hibar-info --mpi --json: exit $?"
"$bld/tools/hibar-info" --mpi >"$TMP/info.txt" || fail "hibar-info --mpi: exit $?"
for p in barrier_max gather_min gather_max; do
    op=${p%_*} b=${p#*_}
    want=$(sed -n "s/^coll_hibar_${p}_node = //p" "$X")
    got=$(sed -n "s/^mca:coll:hibar:param:coll_hibar_${p}_node:value://p" "$TMP/ompi")
    [ "$got" = "$want" ] || fail "Open MPI reads coll_hibar_${p}_node = '$got', the file says '$want'"
    grep -q "^mca:coll:hibar:param:coll_hibar_${p}_node:source:file ($X:" "$TMP/ompi" ||
        fail "Open MPI does not take coll_hibar_${p}_node from $X"
    got=$(python3 -c "import json,sys; e=json.load(open(sys.argv[1]))['bytes']['$op']['node']; \
print(e['$b'], e['${b}_source'])" "$TMP/info")
    [ "$got" = "$want $X" ] || fail "hibar-info: coll_hibar_${p}_node: '$got', not '$want $X'"
    grep -q "^  coll_hibar_${p}_node = $want  (file $X)$" "$TMP/info.txt" ||
        fail "hibar-info --mpi does not name $X for coll_hibar_${p}_node"
done
# the environment over the file, for both
OMPI_MCA_coll_hibar_gather_min_node=777 "$bld/tools/hibar-info" --mpi >"$TMP/info.txt" ||
    fail "hibar-info --mpi: exit $?"
grep -q "^  coll_hibar_gather_min_node = 777  (environment)$" "$TMP/info.txt" ||
    fail "hibar-info --mpi: the environment does not win over the file"
OMPI_MCA_coll_hibar_gather_min_node=777 ompi_info --param coll hibar --level 9 --parsable |
    grep -q "^mca:coll:hibar:param:coll_hibar_gather_min_node:value:777$" ||
    fail "Open MPI: the environment does not win over the file"
# a bad value is refused with its place
echo "coll_hibar_bcast_max_nodes = lots" >>"$X"
! "$bld/tools/hibar-info" --mpi >"$OUT" 2>"$ERR" || fail "hibar-info --mpi took a bad value"
grep -q "$X:[0-9]*: coll_hibar_bcast_max_nodes = 'lots'" "$ERR" || fail "no message naming the line"
echo "PASS: mpi_xover_file"
