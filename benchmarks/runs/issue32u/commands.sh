#!/bin/bash
# Issue 32, fifteenth round (RESULTS.md): rows off the lines summed in a group frame, the running
# sums in L1 (frame.c), paired in one process with the tree (A) against the read limit, one thread.
# Run from the repository root with its venv: benchmarks/runs/issue32u/commands.sh > out.txt
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=$("$root/.venv/bin/python" -c '
from attnviz import native_build as nb
print(" ".join(f for f in (*nb.FLAGS, *nb.NATIVE_FLAGS) if f != "-shared"))')
defs=()
for p in weighted_rows_f32:wr weighted_rows_tile:tile weighted_rows_lanes:lanes \
    weighted_rows_realigns:realigns weighted_rows_abi:abi; do defs+=("-D${p%%:*}=${p#*:}_a"); done
# shellcheck disable=SC2086
cc $flags "${defs[@]}" -c "$root/attnviz/csrc/weighted_rows.c" -o "$out/a.o"
# shellcheck disable=SC2086
cc $flags -c "$root/attnviz/csrc/read_floats.c" -o "$out/read.o"
shapes="16x64x61 7x61x61 16x64x45 1x1024x61 1x4096x61 1x2048x45 1x1024x72 1x2048x20 4x512x24"
for variant in "NG=1" "NG=2" "NG=4" "NG=8" "NG=4 PF=128" "NG=4 PF=512" "NG=4 NOPERM=1"; do
    defines=()
    for d in $variant; do defines+=("-D$d"); done
    # shellcheck disable=SC2086
    cc $flags "${defines[@]}" -c "$here/frame.c" -o "$out/b.o"
    cc -O2 -std=c11 "$root/benchmarks/pair_kernels.c" "$out/a.o" "$out/b.o" "$out/read.o" -fopenmp -lm -o "$out/pair"
    echo "# frame.c with $variant (B), the tree (A)"
    for s in $shapes; do
        # shellcheck disable=SC2046
        TIME_WRONG=1 "$out/pair" $("$root/.venv/bin/python" -c "
from attnviz import native
b, t, h = map(int, '$s'.split('x'))
print(*native.call_plan(b, t, h, 1)[0])") 0
    done
done
