#!/usr/bin/env bash
# Issue 32, twenty-third round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. Trees: de3f9ee (before), b29c116 (stripes of whole sentences for
# rows of 257-512 numbers from DRAM), c7fa949 (and their sums streamed to out past the caches).
set -euo pipefail
out=benchmarks/runs/issue32ac
py=$PWD/.venv/bin/python

# long_python.txt and stream_python.txt: through Python, one and two threads, before (de3f9ee) and
# after (b29c116, then c7fa949), twice, alternating
git worktree add -f /tmp/wt_before de3f9ee
run_python() { # $1: sizes
    for i in 1 2; do for tree in /tmp/wt_before "$PWD"; do for t in 1 2; do
        echo "== $tree threads $t run $i"
        (cd "$tree" && PYTHONPATH=$tree "$py" -m attnviz.bench --device cpu --threads $t \
            --methods fused --sizes "$1" --rounds 11 2>&1 | grep -E "^cpu .*fused" | cut -c1-100)
    done; done; done
}
git checkout -q b29c116
run_python 6553x16x320,5461x16x384,4096x16x512,7710x16x300,2048x32x512,2048x16x1024 \
    > $out/long_python.txt
git checkout -q c7fa949
run_python 6553x16x320,5461x16x384,4096x16x512,7710x16x300,8192x8x512,10922x8x384,2048x16x1024 \
    > $out/stream_python.txt

# plain C: ../issue32aa/medians_ab.c (two trees, one process) with its outputs 4 KiB-aligned, as
# PyTorch's are at least 64-byte aligned (the streamed stores of long_sentences.h need whole lines;
# malloc's large blocks start 16 bytes past a page); each tree's weighted_rows.c built with its entry
# points renamed, as in ../issue32aa/commands.sh
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
build() { # $1 tree (a folder holding attnviz/csrc), $2 name
    # shellcheck disable=SC2046,SC2086  # flags and names are words
    cc $flags $(rename $2) -c "$1/attnviz/csrc/weighted_rows.c" -o "$work/$2.o"
}
build /tmp/wt_before a
build "$PWD" b
# shellcheck disable=SC2086
cc $flags -c attnviz/csrc/read_floats.c -o "$work/rf.o"
big='(b\*h\*4+4095)\/4096\*4096'
sed "s/\*oa=malloc(b\*h\*4),\*ob=malloc(b\*h\*4)/*oa=aligned_alloc(4096,$big),*ob=aligned_alloc(4096,$big)/" \
    benchmarks/runs/issue32aa/medians_ab.c > "$work/medians_ab.c"
grep -q "oa=aligned_alloc" "$work/medians_ab.c" # the edit found its target
# shellcheck disable=SC2086
cc $flags -o "$work/ab" "$work/medians_ab.c" "$work/a.o" "$work/b.o" "$work/rf.o" -lm
# plain_c.txt: A before, B now; mode 32 (WHOLE_ROWS, from DRAM) for A, 96 (and SENTENCE_STRIPES)
# for B where the plan sets it, units of 4 MiB as the read limit's from DRAM; 128 MiB of x
{
    for s in "6553 16 320" "5461 16 384" "4096 16 512" "7710 16 300" "4194 16 500" "8192 8 512" \
        "10922 8 384" "2048 32 512"; do
        set -- $s
        "$work/ab" $1 $2 $3 $1 1 1 32 96 15 4194304
    done
    for s in "6553 16 320" "5461 16 384" "4096 16 512" "7710 16 300"; do # two threads: the plan's
        set -- $s                                                         # units, 16 MiB at most
        g=$((4194304 / ($2 * $3)))
        [ $g -gt $(($1 / 8)) ] && g=$(($1 / 8))
        "$work/ab" $1 $2 $3 $g 1 2 32 96 15 4194304
    done
    # unchanged: rows of 1024 (stripes of each sentence), short rows (sums in registers)
    "$work/ab" 2048 16 1024 2048 1 1 32 32 15 4194304
    "$work/ab" 16384 16 128 16384 1 1 96 96 15 4194304
} > $out/plain_c.txt
# stream_alone_plain_c.txt: the streamed stores alone, b29c116 (A) against c7fa949 (B), two
# threads, twice: the same build with A from b29c116's tree, then
#   for i in 1 2; do "$work/ab" 7710 16 300 963 1 2 96 96 15 4194304
#                    "$work/ab" 4194 16 500 524 1 2 96 96 15 4194304; done
# long_grid.txt was made the same way, one thread, 11 rounds, A de3f9ee and B the first version
# of long_sentences.h (rows up to 1024, no streamed stores; b29c116 without its bounds): for H in
# 272 320 384 512 640, T in 8 16 32 64 128, B = 32 MiB / (T * H)
# The variants measured and not kept (rows of 1024 and 640, two stripes and one, asking ahead,
# the streamed stores for striped_sentences and for the stripes of each sentence) were built from
# the tree with that line edited; their numbers are in RESULTS.md.

# llc_as_python.txt: the plan told the last-level cache is 28 MiB (llc_as.py), against the machine's
# 32, one thread, twice, alternating (at 660bb87)
S=1024x16x512,8x1024x1024,16x512x1024,64x128x1024,128x256x256,2048x8x512
for i in 1 2; do for llc in 32 28; do
    echo "== llc $llc run $i"
    "$py" $out/llc_as.py $llc --device cpu --threads 1 --methods fused --sizes $S --rounds 11 2>&1 |
        grep -E "^cpu .*fused" | cut -c1-100
done; done > $out/llc_as_python.txt
# default_end_t1.txt, default_end_t2.txt: the default run at the end (at a187fc7)
for t in 1 2; do "$py" -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt 2>&1; done
