#!/usr/bin/env bash
# Fourteenth round (issue 32): three changed kernels, each a patch on attnviz/csrc as at fb2fc1c (the
# tree of this round), paired with the tree in one process (plain C, one thread). Run from the
# repository root: benchmarks/runs/issue32t/commands.sh [CHANGE ...] (all three if none given).
set -euo pipefail
out=benchmarks/runs/issue32t
changes=("$@")
[ $# -eq 0 ] && changes=(pseudo_rows fold all_lines)
for change in "${changes[@]}"; do
    tree=$(mktemp -d)
    mkdir -p "$tree/attnviz"
    cp -r attnviz/csrc "$tree/attnviz/csrc"
    (cd "$tree" && patch -s -p1 < "$OLDPWD/$out/$change.patch")
    case $change in
    pseudo_rows) shapes="1x2048x20 1x2048x40 4x512x24 1x2048x45 1x1024x72 1x1024x61 16x64x40 16x64x72
                         8x128x88 4x256x61 1x256x200 1x512x101" ;;
    fold | all_lines) shapes="16x64x61 1x1024x61 7x61x61 8x64x101 8x61x51 16x64x45 16x61x201" ;;
    esac
    # shellcheck disable=SC2086  # shapes are words
    benchmarks/pair_kernels.sh attnviz/csrc "$tree/attnviz/csrc" $shapes > "$out/pair_$change.txt"
    rm -rf "$tree"
done
# the row-by-row loop alone (loads and adds, no weights, no shifts), against one stream
if [ $# -eq 0 ]; then
    bin=$(mktemp)
    gcc -O3 -march=native "$out/row_loop.c" -o "$bin"
    for shape in "1024 61" "1024 45" "512 101" "64 61" "1024 64" "2048 20"; do
        # shellcheck disable=SC2086  # T and H
        "$bin" $shape
    done > "$out/row_loop.txt"
    rm -f "$bin"
fi
