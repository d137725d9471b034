#!/usr/bin/env bash
# Issue 32, twenty-ninth round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. Plain C, paired in one process (benchmarks/pair_kernels.sh), the
# output at the start of a page (OUT_AT=0, as the library's). Trees, each a copy of attnviz/csrc:
#   base:   67d90d5^'s kernel (short sentences of rows of 513-1024 numbers as four stripes of
#           sentences, long_run; longer rows as four stripes of each sentence's rows)
#   blocks: the experiment (blocks_experiment.patch): each sentence alone, blocks of 8 vectors of
#           columns in registers, the next sentence's same lines asked for with prefetcht1;
#           b_nopf, b_t0, b_t2: the same not asking, asking into the L1 (prefetcht0), the L3 (t2)
#   new:    a first generic version: the sums through a row in the L1, streamed at the sentence's end
#   new2:   67d90d5 (the sums on the lines streamed from registers as each block is done)
#   cur:    67d90d5; wide: 189566e's change (rows of 1025-4096), called with B_PLAN mode 96
set -euo pipefail
out=benchmarks/runs/issue32ai
pair() { OUT_AT=0 PAIR_CACHE=/tmp/pair benchmarks/pair_kernels.sh "$@" | grep threads; }
t=/tmp/s35/try

# variants.txt: the experiment against base, then each way of asking ahead
pair $t/base $t/blocks 4096x8x1024 4096x8x1024 2048x16x1024 4096x8x512
s="4096x8x1024 8192x4x1024 2048x16x1024 1024x32x1024 4096x8x768 2730x16x768 6553x8x640 4681x8x896"
for b in blocks b_nopf b_t0 b_t2; do echo "== $b"; pair $t/base $t/$b $s; done

# generic.txt: the generic versions against the experiment (XN, XN2) and base (AN), two runs each
for i in 1 2; do
    pair $t/blocks $t/new 4096x8x1024 8192x4x1024 4096x8x768 | sed 's/^/XN /'
    pair $t/base $t/new 4096x8x1024 4096x8x999 4096x8x1024@2 4096x8x999@2 | sed 's/^/AN /'
done
for i in 1 2; do pair $t/blocks $t/new2 4096x8x1024 8192x4x1024 4096x8x768 | sed 's/^/XN2 /'; done

# grid.txt: 67d90d5 against base over T = 2-8 and H = 800-1024, one and two threads
pair $t/base $t/new2 16384x2x1024 10922x3x1024 6553x5x1000 4681x7x1024 5242x8x800 10485x4x800 \
    4194x8x1000 8192x4x1024 5242x8x800@2 10485x4x800@2 4194x8x1000@2 8192x4x1024@2 4681x7x1024@2

# wide.txt: rows of 1025-4096, the library's plan (A) against mode 96 (B), two runs on one thread
for s in "2048x8x1500 2048" "2048x8x2001 2048" "1024x8x4096 1024" "4096x4x1500 4096" "2048x8x2048 2048"; do
    set -- $s
    for i in 1 2; do B_PLAN="$2 1 1 96" pair $t/cur $t/wide $1; done
done
for s in "2048x8x1500 256" "2048x8x2001 256" "1024x8x4096 128" "4096x4x1500 512"; do
    set -- $s
    B_PLAN="$2 1 2 96" pair $t/cur $t/wide $1@2
done

# through Python: fused over the floor, 11 paired rounds, two runs of each tree alternating
py=.venv/bin/python
source benchmarks/runs/paired_python.sh
paired_python 739d90f 67d90d5 4096x8x1024,4096x8x999,4681x7x1024,5242x8x800,4096x4x1024 \
    > $out/python_pair.txt
paired_python 67d90d5 189566e 2048x8x1500,2048x8x2001,1024x8x4096,4096x4x1500,2048x8x2048 \
    > $out/python_pair_wide.txt

# tried, not kept: more rows a sentence (BLOCK_ROWS 16, 12 in copies of 189566e's tree)
for i in 1 2; do
    pair $t/head $t/r16 2048x16x1024 2730x16x768 3276x16x640 2340x16x896 2730x12x1024 \
        2048x16x1000 2048x16x1024@2 2730x16x768@2
done > $out/rows16.txt
for i in 1 2; do
    pair $t/head $t/r12 2730x12x1024 3276x10x1024 3640x9x1024 3640x12x768 4369x10x768 \
        4369x12x640 3276x10x1000 2730x12x1024@2 3640x12x768@2
    pair $t/head $t/r12 3495x12x800 2996x12x896 4194x10x800 3744x10x896 2796x12x1000 3744x10x896@2
done > $out/rows12.txt

# the default run at the end (no default size takes the changed path)
for t in 1 2; do .venv/bin/python -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt; done
