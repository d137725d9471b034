#!/usr/bin/env bash
# Issue 32, twenty-eighth round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. All plain C, paired in one process (benchmarks/pair_kernels.sh),
# the output at the start of a page (OUT_AT=0, as the library's). Trees, each a copy of attnviz/csrc:
#   A: 6b451da's kernel (before: short rows off the lines streamed through a row in memory, and on
#      one thread only for T <= STREAM_OFF_ROWS = 2)
#   B: every such row's lines put together in registers (stream_regs), STREAM_OFF_ROWS = 8
#   C: A with STREAM_OFF_ROWS = 8 (through memory at T <= 8 on one thread too)
#   E: B for rows of at least 6 vectors (STREAM_REGS_VECS), C for shorter ones
#   F: what was committed: E, but rows of fewer than 6 vectors on one thread as in A
# The machine was noisy this session (the read limit moved 20-51 GB/s between shapes and runs):
# compare A and B within a line only.
set -euo pipefail
out=benchmarks/runs/issue32ah
pair() { OUT_AT=0 PAIR_CACHE=/tmp/pair benchmarks/pair_kernels.sh "$@" | grep threads; }
two() { for s in "$@"; do printf '%s@2 ' "$s"; done; }

# regs_first.txt: three runs, lines "AB" (A against B) and "CB" (C against B)
first="65536x4x61 16384x8x100 32768x4x200 65536x2x127"
for i in 1 2 3; do
    pair A B $first 65536x4x61@2 16384x8x100@2 | sed 's/^/AB /'
    pair C B $first 65536x4x61@2 | sed 's/^/CB /'
done > $out/regs_first.txt

# regs_all.txt: T = 4, H from 45 to 255 (3 to 16 vectors), x of 105-161 MiB; two runs
all="196608x4x45 131072x4x61 131072x4x77 65536x4x100 65536x4x127 49152x4x160 32768x4x200 32768x4x255"
for i in 1 2; do
    pair A B $all $(two $all) | sed 's/^/AB /'
    pair C B $all | sed 's/^/CB /'
done > $out/regs_all.txt

# regs.txt: A against E, two runs
some="196608x4x45 131072x4x61 131072x4x77 65536x4x100 65536x4x127 32768x4x200 65536x2x127 16384x8x100"
for i in 1 2; do pair A E $some $(two $some) | sed 's/^/AE /'; done > $out/regs.txt

# committed.txt: A against F, one run
last="131072x4x61 131072x4x77 65536x4x100 65536x4x127 32768x4x200 65536x2x127 16384x8x100"
pair A F $last $(two $last) | sed 's/^/AF /' > $out/committed.txt

# python_pair.txt: through Python (python -m attnviz.bench, fused over the floor, 11 rounds), 6b451da
# against 326de62, one and two threads, two runs of each tree alternating
py=.venv/bin/python
source benchmarks/runs/paired_python.sh
paired_python 6b451da 326de62 \
    65536x4x100,65536x4x127,32768x4x200,65536x2x127,16384x8x100,131072x4x61 > $out/python_pair.txt

# default_end_t1.txt, default_end_t2.txt: the default run at the end (cd876ee)
for t in 1 2; do .venv/bin/python -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt; done
# l3_rerun.txt: 32x256x512 again through the CLI, then in plain C against 5819be3's kernel
