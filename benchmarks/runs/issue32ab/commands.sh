#!/usr/bin/env bash
# Issue 32, twenty-second round (2026-12-07, the twenty-first round's AMD EPYC Zen 4 host): how the
# files here were made, from the repository root. Trees: abd0314 (before both changes), 81f270f
# (whole sentences where they share out nearly evenly), c594c9a (and few_rows).
set -euo pipefail
out=benchmarks/runs/issue32ab
py=$PWD/.venv/bin/python

# uneven_python.txt: through Python, two threads, before (abd0314) and after (81f270f), twice
git worktree add -f /tmp/wt_before abd0314
S=33x65x127,7x100x300,7x333x555,7x256x512,33x64x128,17x65x127,9x200x300,33x256x128,65x32x61
S=$S,11x333x555
for i in 1 2; do for tree in /tmp/wt_before "$PWD"; do
    echo "== $tree run $i"
    (cd "$tree" && PYTHONPATH=$tree "$py" -m attnviz.bench --device cpu --threads 2 \
        --methods fused --sizes $S --rounds 11 2>&1 | grep -E "^cpu .*fused" | cut -c1-100)
done; done > $out/uneven_python.txt

# few_rows_python.txt: the same, one and two threads, before (81f270f) and after (c594c9a's
# first version, without FEW_ROWS_WAYS: 32x16x1024 there is the loss that made it)
git -C /tmp/wt_before checkout -q 81f270f
S=64x16x768,64x16x777,128x12x1000,64x4x1024,256x8x1024,64x20x768,32x16x1024,64x17x777
for i in 1 2; do for tree in /tmp/wt_before "$PWD"; do for t in 1 2; do
    echo "== $tree threads $t run $i"
    (cd "$tree" && PYTHONPATH=$tree "$py" -m attnviz.bench --device cpu --threads $t \
        --methods fused --sizes $S --rounds 11 2>&1 | grep -E "^cpu .*fused" | cut -c1-100)
done; done; done > $out/few_rows_python.txt

# plain_c.txt: medians_plan.c (one tree, two plans) and ../issue32aa/medians_ab.c (two trees);
# each tree's weighted_rows.c built with its entry points renamed, as in ../issue32aa/commands.sh
flags=$("$py" -c '
from attnviz import native_build as nb
print(" ".join(f for f in (*nb.FLAGS, *nb.NATIVE_FLAGS) if f != "-shared"))')
work=$(mktemp -d)
rename() { # the entry points of build $1
    for f in f32 tile lanes realigns abi; do
        n=weighted_rows_$f
        [ $f = f32 ] && echo -n "-D$n=wr_$1 " || echo -n "-D$n=${f}_$1 "
    done
}
# shellcheck disable=SC2046,SC2086  # flags and names are words
cc $flags $(rename a) -fPIC -c /tmp/wt_before/attnviz/csrc/weighted_rows.c -o "$work/a.o"
# shellcheck disable=SC2046,SC2086
cc $flags $(rename b) -fPIC -c attnviz/csrc/weighted_rows.c -o "$work/b.o"
# shellcheck disable=SC2086
cc $flags -c attnviz/csrc/read_floats.c -o "$work/rf.o"
# shellcheck disable=SC2086
cc $flags -o "$work/mp" $out/medians_plan.c "$work/b.o" "$work/rf.o" -lm
# shellcheck disable=SC2086
cc $flags -o "$work/ab" benchmarks/runs/issue32aa/medians_ab.c "$work/a.o" "$work/b.o" \
    "$work/rf.o" -lm
for i in 1 2; do
    # A: the plan before (each sentence cut by its rows); B: whole sentences
    "$work/mp" 33 65 127 1 2 2 8 1 1 2 8 40
    "$work/mp" 7 100 300 1 2 2 8 1 1 2 8 40
    "$work/mp" 7 333 555 1 2 2 0 1 1 2 0 30
    "$work/mp" 7 256 512 1 2 2 0 1 1 2 0 30
    "$work/mp" 7 500 1000 1 2 2 0 1 1 2 0 20
    "$work/mp" 5 1001 999 1 2 2 0 1 1 2 0 20
done
for s in "64 16 777" "64 16 768" "128 12 1000" "64 17 777" "64 20 768" "64 4 1024" \
    "256 2 1024" "64 32 512" "32 16 1024" "16 16 2048" "32 16 1280"; do
    # shellcheck disable=SC2086  # a shape is words
    "$work/ab" $s ${s%% *} 1 1 0 0 30
done
for s in "2048 16 1024 2048 1 1" "2048 16 1024 256 1 2" "4096 8 777 4096 1 1"; do
    # shellcheck disable=SC2086
    "$work/ab" $s 32 32 10 4194304 # from DRAM: WHOLE_ROWS, units of 4 MiB
done
# The variants tried (FEW_ROWS 16 and 24, and the output kept in L1, the sums wrong: every
# sentence's sums written to out's first two rows, in sum_sentences) were built from the tree with
# its defines changed (-DFEW_ROWS=24 needs the #define made #ifndef) or that one line edited;
# two_rows_a_stripe.diff is the variant of four stripes two rows each a step.
