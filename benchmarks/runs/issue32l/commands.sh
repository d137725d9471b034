#!/bin/bash
# A/B in alternating processes: the kernel and plan before (dbac56e~1) and after (dbac56e) the
# sentence's pieces stopped waiting at a barrier to be added, and tiles were dropped without AVX-512
cd /work/main
D=benchmarks/runs/issue32l
SIZES=1x128x1024,1x256x1024,1x250x777,3x61x777,2x64x1024,1x4096x777,1x4096x1024,3x1001x777
: > $D/load.txt
for r in 1 2 3 4 5 6 7; do
  for v in before after; do
    rev=dbac56e; [ $v = before ] && rev=dbac56e~1
    git show $rev:attnviz/csrc/weighted_rows.c > attnviz/csrc/weighted_rows.c
    git show $rev:attnviz/native.py > attnviz/native.py
    echo "$(date -u +%H:%M:%S) $v run$r $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/load.txt
    chrt -f 10 .venv/bin/python -m attnviz.bench --device cpu --threads 2 --methods bmm,fused --rounds 11 --json --sizes $SIZES > $D/${v}_run$r.jsonl 2> $D/${v}_run$r.err
  done
done
git checkout attnviz/csrc/weighted_rows.c attnviz/native.py
echo "$(date -u +%H:%M:%S) done" >> $D/load.txt
