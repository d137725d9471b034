#!/bin/bash
# A/B in alternating processes, five runs each, one and two threads: the kernel and plan at the
# start of this session (51d4000) and now (1493bad: pieces added by the last thread to finish,
# no tiles without AVX-512, no OpenMP region for one thread); the sizes of issue32k
cd /work/main
D=benchmarks/runs/issue32m
SIZES=2x64x1024,4x64x1024,1x256x1024,1x250x777,3x61x777,8x64x128,16x128x128,16x128x512,32x256x512,2x1024x1024,3x1001x777,16x256x1024,1x4096x777,48x512x1024,7x3001x999,1x65536x1024,6x1024x1024
: > $D/load.txt
lscpu > $D/lscpu.txt
for r in 1 2 3 4 5; do
  for v in before after; do
    rev=1493bad; [ $v = before ] && rev=51d4000
    git show $rev:attnviz/csrc/weighted_rows.c > attnviz/csrc/weighted_rows.c
    git show $rev:attnviz/native.py > attnviz/native.py
    for t in 2 1; do
      echo "$(date -u +%H:%M:%S) $v t$t run$r $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/load.txt
      chrt -f 10 .venv/bin/python -m attnviz.bench --device cpu --threads $t --methods bmm,fused --rounds 11 --json --sizes $SIZES > $D/${v}_t${t}_run$r.jsonl 2> $D/${v}_t${t}_run$r.err
    done
  done
done
git checkout attnviz/csrc/weighted_rows.c attnviz/native.py
echo "$(date -u +%H:%M:%S) done" >> $D/load.txt
