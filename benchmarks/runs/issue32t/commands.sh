#!/usr/bin/env bash
# Fourteenth round (issue 32), on attnviz/csrc as at fb2fc1c (the tree of this round). Run from the
# repository root: benchmarks/runs/issue32t/commands.sh [STEP ...] (every step if none given).
#   pseudo_rows, fold, all_lines: a changed kernel (STEP.patch), paired with the tree in one process
#     (plain C, one thread) -> pair_STEP.txt
#   row_loop: the row-by-row loop alone (loads and adds, no weights, no shifts) against one stream,
#     and with a fixed number of lines a row (no branch on a row's last line) -> row_loop.txt
#   pseudo_rows_no_final_sum: pseudo_rows without its final sum of the q rows (sums wrong on purpose,
#     TIME_WRONG=1), paired with pseudo_rows -> pair_pseudo_rows_no_final_sum.txt
#   no_branches: the kernel with neither per-row branch (every line read, the shift always one way),
#     its sums wrong on purpose (TIME_WRONG=1), paired with all_lines' kernel -> pair_no_branches.txt
set -euo pipefail
out=benchmarks/runs/issue32t
patched() { # a copy of attnviz/csrc with the given patch applied; prints the copy's csrc
    local tree
    tree=$(mktemp -d)
    mkdir -p "$tree/attnviz"
    cp -r attnviz/csrc "$tree/attnviz/csrc"
    (cd "$tree" && patch -s -p1 < "$OLDPWD/$out/$1.patch")
    echo "$tree/attnviz/csrc"
}
bound() { # bound BASE CHANGE SHAPE...: CHANGE, its sums wrong on purpose, paired with BASE
    local base change
    base=$(patched "$1")
    change=$(patched "$2")
    TIME_WRONG=1 benchmarks/pair_kernels.sh "$base" "$change" "${@:3}" | grep -v wrongly \
        > "$out/pair_$2.txt"
    rm -rf "${base%/attnviz/csrc}" "${change%/attnviz/csrc}"
}
steps=("$@")
[ $# -eq 0 ] && steps=(pseudo_rows fold all_lines row_loop no_branches pseudo_rows_no_final_sum)
for step in "${steps[@]}"; do
    case $step in
    pseudo_rows)
        tree=$(patched pseudo_rows)
        benchmarks/pair_kernels.sh attnviz/csrc "$tree" 1x2048x20 1x2048x40 4x512x24 1x2048x45 \
            1x1024x72 1x1024x61 16x64x40 16x64x72 8x128x88 4x256x61 1x256x200 1x512x101 \
            > "$out/pair_pseudo_rows.txt" ;;
    fold | all_lines)
        tree=$(patched "$step")
        benchmarks/pair_kernels.sh attnviz/csrc "$tree" 16x64x61 1x1024x61 7x61x61 8x64x101 8x61x51 \
            16x64x45 16x61x201 > "$out/pair_$step.txt" ;;
    row_loop)
        tree=$(mktemp -d)
        gcc -O3 -march=native "$out/row_loop.c" -o "$tree/loop"
        gcc -O3 -march=native -DFIXED_LINES=5 "$out/row_loop.c" -o "$tree/fixed"
        for shape in "1024 61" "256 61" "64 61" "1024 45" "512 101" "1024 64" "2048 20"; do
            # shellcheck disable=SC2086  # T and H
            "$tree/loop" $shape
            # shellcheck disable=SC2086
            case $shape in *" 61") "$tree/fixed" $shape | sed 's/^/5 lines a row: /' ;; esac
        done > "$out/row_loop.txt" ;;
    no_branches) bound all_lines no_branches 16x64x61 1x1024x61 7x61x61 16x64x45 8x64x101 ;;
    pseudo_rows_no_final_sum)
        bound pseudo_rows pseudo_rows_no_final_sum 4x256x61 16x64x72 8x128x88 1x1024x61 1x2048x20 ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
    esac
    [ -n "${tree:-}" ] && rm -rf "${tree%/attnviz/csrc}"
    tree=
done
