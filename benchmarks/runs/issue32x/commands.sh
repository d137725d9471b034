#!/usr/bin/env bash
# Issue 32, eighteenth round (2026-12-06, an AMD EPYC Zen 4 host): how the files here were made,
# from the repository root. before = 4280010 (its csrc at /tmp/csrc_head/attnviz/csrc, a worktree
# at /tmp/wt24), after = 12f977c.
set -euo pipefail
out=benchmarks/runs/issue32x
git worktree add /tmp/wt24 4280010
mkdir -p /tmp/csrc_head && git archive 4280010 attnviz/csrc | tar -x -C /tmp/csrc_head

# odd_t1.txt / odd_t2.txt (first, at 4280010): odd T and H in L2, the L3 and DRAM, one and two
# threads: H = 2049 from DRAM was at 0.84-0.85 of the read limit
for t in 1 2; do
    .venv/bin/python -m attnviz.bench --device cpu --threads $t --methods fused,bmm --rounds 11 \
        --sizes 3x1001x777,1x2001x777,7x333x999,12x1001x777,5x4097x1001,1x40001x1001,9x2047x2049 \
        > $out/odd_t$t.txt
done

# pairs_llc_mid.txt, pairs_llc16.txt: two stripes (TWO_STRIPES set by the tree's plan) against
# four (4280010 ignores the bit), x of 10-16 MiB, both orders: two win at 10 MiB, not from 12-14
S="5x256x2048 6x256x2048 7x256x2048 3x256x4096 5x256x1999 6x256x2048@2"
benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_head/attnviz/csrc $S > $out/pairs_llc_mid.txt
benchmarks/pair_kernels.sh /tmp/csrc_head/attnviz/csrc attnviz/csrc $S >> $out/pairs_llc_mid.txt
S="4x512x2048 2x512x4097 8x256x2048 4x256x4096@2 8x256x1536"
for r in 1 2; do
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_head/attnviz/csrc $S
    benchmarks/pair_kernels.sh /tmp/csrc_head/attnviz/csrc attnviz/csrc $S
done > $out/pairs_llc16.txt

# pairs_final.txt: before against after, plain C, both orders (the plan of 12f977c)
S="8x128x2048 8x128x1999 12x128x1280 5x256x2048 2x256x4097 1x120x1999 1x64x4097@2 6x256x2048@2
   4x4096x4096 9x2047x2049 8x2048x2560 2x8191x4097 4x4096x4096@2 9x2047x2049@2 4x512x2048
   3x61x777 1x250x777@2 32x256x512 8x16384x1024"
{
    benchmarks/pair_kernels.sh /tmp/csrc_head/attnviz/csrc attnviz/csrc $S
    echo "== reversed"
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_head/attnviz/csrc $S
} > $out/pairs_final.txt 2>&1

# bench_ab.txt: through Python, each tree's benchmark, alternating, twice, one and two threads
S=8x128x2048,8x128x1999,5x256x2048,1x120x1999,32x256x512,4x4096x4096,8x2048x2560,9x2047x2049
for r in 1 2; do
    for tree in /tmp/wt24 "$PWD"; do
        for t in 1 2; do
            echo "== run $r tree $tree threads $t"
            (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench \
                --device cpu --threads $t --methods fused --rounds 11 --sizes $S \
                | grep -E '^cpu +[0-9x]+ +float32 +fused')
        done
    done
done > $out/bench_ab.txt 2>&1

# bench_llc_t1.txt: the cached sizes again on one thread, the trees alternating, twice (run 2 of
# bench_ab.txt ran on a busier machine: the unchanged 32x256x512 fell to 0.68-0.85 there)
S=8x128x2048,8x128x1999,5x256x2048,1x120x1999,32x256x512
for r in 1 2; do
    for tree in /tmp/wt24 "$PWD"; do
        echo "== $r $tree"
        (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench --device cpu \
            --threads 1 --methods fused --rounds 11 --sizes $S | grep -E '^cpu +[0-9x]+ +float32 +fused')
    done
done > $out/bench_llc_t1.txt 2>&1

# pairs_balanced.txt: blocks as even as 32 columns allow (a change tried and dropped: `per` columns
# a block in sum_rows_of, an odd last vector in the two-vector loop; at /work/main's csrc then)
# against 04be751 (/tmp/csrc_04), both orders
S="2x256x4097 4x128x4097 4x256x2049 1x60x4097 1x100x2049 8x128x2064 4x128x2560 2x128x3072
   4x128x2560@2 2x256x4097@2 2x2048x2049 4x4096x4096 8x128x2048 3x61x777"
{
    benchmarks/pair_kernels.sh /tmp/csrc_04/attnviz/csrc attnviz/csrc $S
    echo "== reversed"
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_04/attnviz/csrc $S
} > $out/pairs_balanced.txt 2>&1

# columns_chunks.txt: two and four column chunks on two threads, the same build (04be751), by a
# copy of benchmarks/pair_kernels.c whose B takes a shape of its own (argv 9-15:
# /tmp/pp/pairplan.c), both orders, twice. pair_kernels.sh does the first order itself since
# (B_PLAN): B_PLAN="3 4 2 10" benchmarks/pair_kernels.sh attnviz/csrc attnviz/csrc 3x61x777@2
for r in 1 2; do
    for s in "3 61 777 3" "1 250 777 1" "5 61 777 5" "2 100 501 2" "1 160 1001 1"; do
        set -- $s
        /tmp/pp/pairplan $1 $2 $3 $4 2 2 10 0 $1 $2 $3 $4 4 2 10
        /tmp/pp/pairplan $1 $2 $3 $4 4 2 10 0 $1 $2 $3 $4 2 2 10
    done
done > $out/columns_chunks.txt 2>&1

# survey_after_t1.txt / survey_after_t2.txt (at bc679c7): the seventeenth round's survey, and long rows
S=8x64x128,16x128x128,1x2048x128,32x256x512,8x16384x1024,1x65536x1024,16x64x61,1x1024x61,7x61x61,8x64x100,3x61x777,1x250x777
S=$S,8x128x2048,8x128x1999,4x4096x4096,9x2047x2049
for t in 1 2; do
    .venv/bin/python -m attnviz.bench --device cpu --threads $t --methods fused,bmm --rounds 11 \
        --sizes $S > $out/survey_after_t$t.txt
done

# l2_t2_ab.txt, pairs_short.txt: the survey's lower two-thread numbers for unchanged shapes, checked:
# through Python the trees alternating three times (two threads), then plain C both orders
for r in 1 2 3; do
    for tree in /tmp/wt24 "$PWD"; do
        echo "== $r $tree"
        (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench --device cpu \
            --threads 2 --methods fused --rounds 11 --sizes 3x61x777,1x250x777,16x64x61,7x61x61 |
            grep -E '^cpu +[0-9x]+ +float32 +fused' | sed -E 's/ +/ /g' | cut -d' ' -f2,11,12)
    done
done > $out/l2_t2_ab.txt 2>&1
S="7x61x61 16x64x61 64x16x61 8x64x100 7x61x61@2 16x64x61@2"
{
    benchmarks/pair_kernels.sh /tmp/csrc_head/attnviz/csrc attnviz/csrc $S
    echo "== reversed"
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_head/attnviz/csrc $S
} > $out/pairs_short.txt 2>&1
