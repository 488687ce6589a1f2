#!/usr/bin/env bash
# fuzz_wire.sh: build the libFuzzer targets of the daemon frame decoder and of the rank-set
# collective's blobs (daemon/launch/hbd_xsc.c, what peer daemons send in a subset fence) with
# clang and run them (60 s and 30 s).
set -u
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/hb_test.sh"
secs=${HIBAR_FUZZ_SECONDS:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/hibar-fuzz.XXXXXX") || exit 99
on_exit 'rm -rf "$work"'
command -v clang >/dev/null 2>&1 || { echo "SKIP: clang not installed"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    >"$work/probe.c"
if ! clang -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" 2>/dev/null; then
    echo "SKIP: clang's libFuzzer runtime is missing (Debian: libclang-rt-14-dev)"
    exit 77
fi
clang -g -O1 -std=gnu11 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src/daemon/core" -I"$src/libclient" -I"$src/common" \
    "$src/tests/fuzz/fuzz_wire.c" "$src/daemon/core/wire.c" "$src/common/hb_status.c" \
    -o "$work/fuzz_wire" || exit 99
# seeds: a valid HELLO (30 nodes), a HIER frame, a heartbeat
mkdir -p "$work/corpus"
hdr() { # type len
    printf 'HBAR\001'"$(printf '\\%03o' "$1")"'\000\000\000\000\000\000\001\000\000\000\000\000\000\000\001\000\000\000\002\000\000\000'"$(printf '\\%03o' "$2")"'\000\000\000'
}
{ hdr 1 8; printf '\036\000\000\000\001\002\003\004'; } >"$work/corpus/hello"
{ hdr 3 4; printf '\001\000\000\000'; } >"$work/corpus/hier"
hdr 2 0 >"$work/corpus/heartbeat"
# JOB frames (launch forwarding): a one-chunk SPEC of 4 bytes (node 2 -> 5) and an OUT line
{ hdr 9 28; printf '\001\001\000\000\002\000\000\000\005\000\000\000\000\000\000\000\004\000\000\000\000\000\000\000abcd'; } >"$work/corpus/job-spec"
{ hdr 9 33; printf '\003\000\000\000\002\000\000\000\005\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000x 1 0 ok\n'; } >"$work/corpus/job-out"
# a census answer (HOLD: node 4 -> the root, one record of 24 bytes)
{ hdr 9 48; printf '\014\000\000\000\004\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000\000\000\000\000'
  printf '\001\000\000\000\000\001\000\000\004\000\000\000\000\000\065\000\000\000\011\000\000\000\004\000'; } >"$work/corpus/job-hold"
"$work/fuzz_wire" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$work/" \
    "$work/corpus" 2>"$work/log"
rc=$?
tail -n 15 "$work/log"
if [ $rc -ne 0 ]; then
    echo "FAIL: the fuzzer found a crash (rc $rc)"
    for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
        [ -f "$f" ] && { echo "input $f:"; od -A d -t x1 "$f" | head -20; }
    done
    exit 1
fi
grep -E '^stat::number_of_executed_units' "$work/log"

# the rank-set collective's blobs: a seed of a good gather release (2 members on 2 nodes, 4
# bytes each): byte 0 picks 2 members, byte 1 node 0, then their nodes 0 and 1
clang -g -O1 -std=gnu11 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$bld" -I"$src/daemon/launch" -I"$src/libclient" \
    -I"$src/common" "$src/tests/fuzz/fuzz_xsc.c" "$src/daemon/launch/hbd_xsc.c" \
    -o "$work/fuzz_xsc" || exit 99
mkdir -p "$work/xcorpus"
u32() { printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) $(($1 >> 8 & 255)) \
    $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"; }
blob() { # node member: magic node op=gather n_here=1 root=0 verdict=0 count=4 order data_len=4
    u32 1129529928; u32 "$1"; u32 3; u32 1; u32 0; u32 0; u32 4; u32 0; u32 77; u32 0; u32 4; u32 0
    u32 0; u32 0; u32 "$2"; u32 0; printf 'abcd'
}
{ printf '\001\000\000\001'; blob 0 0; blob 1 1; } >"$work/xcorpus/gather"
"$work/fuzz_xsc" -max_total_time="$((secs / 2))" -print_final_stats=1 \
    -artifact_prefix="$work/x-" "$work/xcorpus" 2>"$work/xlog"
rc=$?
tail -n 5 "$work/xlog"
if [ $rc -ne 0 ]; then
    echo "FAIL: the blob fuzzer found a crash (rc $rc)"
    for f in "$work"/x-crash-* "$work"/x-leak-* "$work"/x-timeout-*; do
        [ -f "$f" ] && { echo "input $f:"; od -A d -t x1 "$f" | head -20; }
    done
    exit 1
fi
grep -E '^stat::number_of_executed_units' "$work/xlog"
exit 0
