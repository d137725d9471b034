#!/bin/bash
# A/B in alternating processes, one thread, from DRAM: a sentence whole (the plan of 1493bad) and
# cut into pieces of at most MAX_UNIT_NUMEL numbers (bf2a5eb); the kernel is the same
cd /work/main
D=benchmarks/runs/issue32n
SIZES=1x65536x1024,2x32768x1024,48x512x1024,7x3001x999
: > $D/load.txt
for r in 1 2 3 4 5; do
  for v in before after; do
    if [ $v = before ]; then
      git show 1493bad:attnviz/native.py > attnviz/native.py
    else
      git checkout attnviz/native.py
    fi
    echo "$(date -u +%H:%M:%S) $v run$r $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/load.txt
    chrt -f 10 .venv/bin/python -m attnviz.bench --device cpu --threads 1 --methods bmm,fused --rounds 11 --json --sizes $SIZES > $D/${v}_run$r.jsonl 2> $D/${v}_run$r.err
  done
done
git checkout attnviz/native.py
echo "$(date -u +%H:%M:%S) done" >> $D/load.txt
