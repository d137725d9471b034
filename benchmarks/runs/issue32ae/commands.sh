#!/usr/bin/env bash
# Issue 32, twenty-fifth round (2026-12-07, the same AMD EPYC Zen 4 host): how the files here were
# made, from the repository root. Trees: f3f55cc (before), aea9c44 (outputs of 32 MiB and more on
# 2 MiB pages, paged in by the calling thread: attnviz/large_outputs.py, the operator's fresh_block).
set -euo pipefail
out=benchmarks/runs/issue32ae
py=$PWD/.venv/bin/python

# paired_python BEFORE AFTER SIZES METHODS (../paired_python.sh): every cpu line of the table
source benchmarks/runs/paired_python.sh

# huge_python.txt: before and after, fused and bmm (bmm's outputs stay on 4 KiB pages: a control)
big=16384x2x1024,8192x4x1024,8192x1x1024,2048x8x4096,32768x1x512,4096x8x1024
paired_python f3f55cc aea9c44 "$big" bmm,fused > $out/huge_python.txt

# allocation.txt: allocation_ab.py, the kernel through ctypes into an output made three
# ways, interleaved per call, 40 calls each: torch.empty (4 KiB pages), huge pages without the
# paging in ("huge") and with it ("touch1", what aea9c44 keeps); two threads, twice (made before
# the script had its fourth way, "kept", which it now adds to each block)
for i in 1 2; do for s in 16384x2x1024 8192x4x1024; do
    "$py" $out/allocation_ab.py 2 $s; done; done > $out/allocation.txt
"$py" $out/allocation_ab.py 1 16384x2x1024 >> $out/allocation.txt
# allocation_kept.txt: the same with a fourth way, one output paged in once and written every call
for s in 8192x4x1024 16384x2x1024 8192x1x1024; do
    "$py" $out/allocation_ab.py 1 $s; done > $out/allocation_kept.txt

# parallel_python.txt: aea9c44 (the output paged in by the calling thread, holding the GIL) against
# e07291e (paged in without the GIL, each thread a run of pages), and small sizes in L2
# as a control of the builtin's changed call
paired_python aea9c44 e07291e 16384x2x1024,8192x4x1024,2048x8x4096,4x16x32,8x32x64 fused \
    > $out/parallel_python.txt

# small_python.txt, small_python_2.txt: the round's start (f3f55cc) against its end (cf44b84) in L2,
# where the builtin's call changed (e07291e), then again for the size that looked slower on two
# threads in the first (16x128x128: 0.972-0.986 before, 0.959-0.964 after; then 0.966-0.978 and
# 0.966-0.976: noise)
paired_python f3f55cc cf44b84 4x16x32,8x32x64,16x128x128 fused > $out/small_python.txt
paired_python f3f55cc cf44b84 16x128x128,8x128x256 fused > $out/small_python_2.txt

# default_end_t1.txt, default_end_t2.txt: the default run at the end (at cf44b84)
for t in 1 2; do "$py" -m attnviz.bench --device cpu --threads $t > $out/default_end_t$t.txt 2>&1; done
