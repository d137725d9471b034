#!/usr/bin/env bash
# Issue 32, seventeenth round (2026-12-06, an AMD EPYC Zen 4 host): how pairs.txt and
# bench_before_after.txt were made, from the repository root. before = 522cdbb (its csrc at
# /tmp/csrc_before/attnviz/csrc, a worktree at /tmp/wt_before), after = ae44356.
set -euo pipefail
out=benchmarks/runs/issue32w
git worktree add /tmp/wt_before 522cdbb
mkdir -p /tmp/csrc_before && git archive 522cdbb attnviz/csrc | tar -x -C /tmp/csrc_before

# pairs.txt: plain C, both trees in one process, each order twice (one thread: these shapes are
# planned on one thread even where two are asked; H = 777 on two)
S="16x64x61 32x64x61 7x61x61 8x64x100 16x64x45 8x61x51 4x64x200 4x256x61 1x1024x61 64x16x61
   3x61x777 3x61x777@2 1x250x777@2"
for r in 1 2; do
    benchmarks/pair_kernels.sh /tmp/csrc_before/attnviz/csrc attnviz/csrc $S
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_before/attnviz/csrc $S
done > $out/pairs.txt 2>&1

# bench_before_after.txt: through Python, each tree's benchmark, alternating, three times,
# one and two threads (fused's median 'x floor' / 'best'; each tree's own read limit)
for r in 1 2 3; do
    for tree in /tmp/wt_before "$PWD"; do
        for t in 1 2; do
            echo "== run $r tree $tree threads $t"
            (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench \
                --device cpu --threads $t --methods fused --rounds 11 \
                --sizes 16x64x61,32x64x61,7x61x61,8x64x100,16x64x45,8x61x51,4x64x200,1x1024x61 \
                | grep -E '^cpu +[0-9x]+ +float32 +fused')
        done
    done
done > $out/bench_before_after.txt 2>&1

# survey_before_t1.txt / survey_before_t2.txt (run first, from the repository root while it was
# at 522cdbb): where the tree stood on this host, one and two threads, L2 to DRAM, B = 1, rows
# off the lines
S=8x64x128,16x128x128,1x2048x128,32x256x512,8x16384x1024,1x65536x1024,16x64x61,1x1024x61,7x61x61,8x64x100,3x61x777,1x250x777
for t in 1 2; do
    .venv/bin/python -m attnviz.bench --device cpu --threads $t --methods fused,bmm --rounds 11 \
        --sizes $S > $out/survey_before_t$t.txt
done

# straddle_all.txt: short_straddled for every sentence of short rows off the lines (a copy of the
# tree at 6e16ed7 with short_realigned_of's `straddle` set to 1, /tmp/strad_all) against the tree,
# one process, one order; straddle_rule.txt: the rule kept (len[3] == 0 || rows <= 16) against
# 6e16ed7 (/tmp/csrc_b), both orders, twice
S=""
for h in 20 33 45 61 100 150 200 241; do
    for t in 8 16 32 64 256; do S="$S $((65536 / (t * h) > 0 ? 65536 / (t * h) : 1))x${t}x${h}"; done
done
benchmarks/pair_kernels.sh attnviz/csrc /tmp/strad_all $S > $out/straddle_all.txt
for r in 1 2; do
    benchmarks/pair_kernels.sh /tmp/csrc_b/attnviz/csrc attnviz/csrc $S 64x16x61@2 20x48x61 3x5x61
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_b/attnviz/csrc $S 64x16x61@2 20x48x61 3x5x61
done > $out/straddle_rule.txt 2>&1

# straddle_tiny.txt: rows of 17 numbers or fewer off the lines, straddled, against 9958f90
# (/tmp/csrc_c: rows_realigned, their sums in memory), both orders, twice
S="256x16x5 64x64x9 16x256x17 128x32x13 1x4096x5 8x512x9 2x3x5 16x256x3 4x1024x15 1x3x1 4x30x17 3x7x61"
for r in 1 2; do
    benchmarks/pair_kernels.sh /tmp/csrc_c/attnviz/csrc attnviz/csrc $S
    benchmarks/pair_kernels.sh attnviz/csrc /tmp/csrc_c/attnviz/csrc $S
done > $out/straddle_tiny.txt 2>&1

# bench_straddle.txt: through Python, 6e16ed7 (before straddling; a worktree at /tmp/wt_b2) and
# 69c0fae, alternating, three runs each, one thread
for r in 1 2 3; do
    for tree in /tmp/wt_b2 "$PWD"; do
        echo "== run $r tree $tree"
        (cd "$tree" && PYTHONPATH="$tree" "$OLDPWD/.venv/bin/python" -m attnviz.bench \
            --device cpu --threads 1 --methods fused --rounds 11 \
            --sizes 64x16x61,128x8x61,91x16x45,33x32x61,40x16x100,128x32x13,4x1024x15,16x64x61 \
            | grep -E '^cpu +[0-9x]+ +float32 +fused')
    done
done > $out/bench_straddle.txt 2>&1

# straddle_16_rows.txt: the 16-row rule checked: the tree (15cd546) against a copy without it
# (/tmp/norows: straddles() returns len[3] == 0 || n < SHORT_OFF_MIN), both orders, sentences of
# 8 and 16 rows of even H (q = 2 or 4, so steps of four rows do exist there)
S=""
for h in 20 36 52 68 100 120 200 24 40; do
    for t in 8 16; do S="$S $((65536 / (t * h)))x${t}x${h}"; done
done
(benchmarks/pair_kernels.sh attnviz/csrc /tmp/norows $S
    benchmarks/pair_kernels.sh /tmp/norows attnviz/csrc $S) > $out/straddle_16_rows.txt 2>&1

# survey_after_t1.txt / survey_after_t2.txt: the start's survey again at 048a66c, and 64x16x61, 2x3x5
S=8x64x128,16x128x128,1x2048x128,32x256x512,8x16384x1024,1x65536x1024,16x64x61,1x1024x61,7x61x61,8x64x100,3x61x777,1x250x777,64x16x61,2x3x5
for t in 1 2; do
    .venv/bin/python -m attnviz.bench --device cpu --threads $t --methods fused,bmm --rounds 11 \
        --sizes $S > $out/survey_after_t$t.txt
done
