#!/usr/bin/env bash
# Issue 32, twenty-seventh round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. Trees: 013d48b's kernel (before), and copies of the working tree
# on the way to what was committed (their differences below). All plain C, paired in one process
# (benchmarks/pair_kernels.sh), the output at the start of a page (OUT_AT=0, as the library's).
set -euo pipefail
out=benchmarks/runs/issue32ag
before=$(mktemp -d)
git archive 013d48b attnviz/csrc | tar -x -C "$before"
pair() { OUT_AT=0 benchmarks/pair_kernels.sh "$before/attnviz/csrc" "$@" | grep threads; }

# (not kept as a file) bounds for striped_long_sentences' stores, with TIME_WRONG=1: B storing
# nothing at all (4096x8x1024 0.76 -> 0.79, 16384x4x300 0.50 -> 0.73), then B storing each row's
# whole lines only, not the numbers on the lines it shares with its neighbours (16384x4x300
# 0.46 -> 0.67 one thread, 0.44 -> 0.66 two): those few numbers, stored as usual, were the cost.

# long_pair.txt: long rows in short sentences (long_sentences.h), B = each stripe's rows keeping
# their lines' ends whole (line_tail, vectors.h), two runs
for i in 1 2; do
    pair attnviz/csrc 16384x4x300 16384x4x301 7710x16x300 4194x16x500 4194x8x1000 4096x8x1024 \
        16384x4x300@2 4096x8x999@2
done > $out/long_pair.txt

# on_lines.txt: 4096x8x1024, rows on the lines, B with every row through stream_sums, then with
# rows on the lines streamed as before (what is kept); first the same tree twice (the noise)

# short_off.txt: short rows off the lines (quad_straddled) streamed so for T <= 8, three runs
for i in 1 2 3; do
    pair attnviz/csrc 32768x4x200 65536x4x61 16384x8x100 65536x2x127 16384x8x100@2 65536x4x61@2
done > $out/short_off.txt
# short_off_rule.txt: the same on one thread only for T <= STREAM_OFF_ROWS (2), two runs
for i in 1 2; do
    pair attnviz/csrc 65536x2x61 131072x1x100 65536x2x127@2 32768x4x200@2 16384x8x61@2 65536x4x61
done > $out/short_off_rule.txt

# per_sentence.txt: each sentence's own stripes off the lines (rows_realigned) through stream_sums,
# A e3e1180's kernel, B dcce6e1's (one run here; the earlier runs, copied from the console, below it)
after=$(mktemp -d)
git archive e3e1180 attnviz/csrc | tar -x -C "$after"
OUT_AT=0 benchmarks/pair_kernels.sh "$after/attnviz/csrc" attnviz/csrc 2048x8x1500 2048x16x1100 \
    4096x4x1500 2048x8x1100 2048x8x2001 1024x32x1000 2048x8x1500@2 | grep threads > $out/per_sentence.txt

# python_pair.txt: through Python, fused over the floor, before and after (../paired_python.sh)
py=$PWD/.venv/bin/python
source benchmarks/runs/paired_python.sh
paired_python 013d48b e3e1180 16384x4x300,16384x4x301,7710x16x300,65536x2x127,4096x8x999 \
    > $out/python_pair.txt

# default_end_t1.txt, default_end_t2.txt: the default run at the end of the round
for t in 1 2; do "$py" -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt; done
