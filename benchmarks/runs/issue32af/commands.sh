#!/usr/bin/env bash
# Issue 32, twenty-sixth round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. Trees: 2d1bb0d's kernel (before; the same as 0daa8af's), 055cabf
# (short sentences of short rows from DRAM store their sums past the caches: STREAM_SHORT_ROWS).
set -euo pipefail
out=benchmarks/runs/issue32af
py=$PWD/.venv/bin/python

# stream_pair.txt: plain C, paired in one process (benchmarks/pair_kernels.sh), the output at the
# start of a page (OUT_AT=0: the library's outputs are on the lines), twice: A the kernel before,
# B a copy of it whose striped_sentences streamed its sums for at most 8 rows (what 055cabf keeps)
# stream_pair_final.txt: the same, A 2d1bb0d's tree, B 055cabf's
before=$(mktemp -d)
git archive 2d1bb0d attnviz/csrc | tar -x -C "$before"
for i in 1 2; do
    OUT_AT=0 benchmarks/pair_kernels.sh "$before/attnviz/csrc" attnviz/csrc 32768x2x256 16384x4x256 \
        32768x4x128 16384x8x128 16384x16x128 16384x4x256@2 32768x4x128@2
done | sort > $out/stream_pair_final.txt

# stream_python.txt: through Python, fused over the floor, before and after (../paired_python.sh);
# 16384x16x128 (not streamed) as a control, 32768x2x256 (a 32 MiB output: large_outputs) too
source benchmarks/runs/paired_python.sh
paired_python 2d1bb0d 055cabf 32768x2x256,16384x4x256,32768x4x128,8192x8x256,16384x16x128 \
    > $out/stream_python.txt

# chunked.txt: chunked_ab.py, outputs of 32 MiB and more paged in a run of pages at a time, each run
# just before the kernel writes its rows, against all of them first (what attnviz keeps): not kept
for a in "1 8192x1x1024" "1 8192x4x1024" "1 16384x2x1024" "2 16384x2x1024" "2 8192x1x1024"; do
    # shellcheck disable=SC2086  # threads and shape
    "$py" $out/chunked_ab.py $a 20
done > $out/chunked.txt

# default_end_t1.txt, default_end_t2.txt: the default run at the end of the round
for t in 1 2; do "$py" -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt; done
