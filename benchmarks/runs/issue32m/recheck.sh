#!/bin/bash
# the two one-thread sizes whose medians fell in commands.sh (24 MiB against a 32 MiB L3, and
# DRAM at B = 1), again: seven alternating pairs of processes
cd /work/main
D=benchmarks/runs/issue32m
for r in 1 2 3 4 5 6 7; do
  for v in before after; do
    rev=1493bad; [ $v = before ] && rev=51d4000
    git show $rev:attnviz/csrc/weighted_rows.c > attnviz/csrc/weighted_rows.c
    git show $rev:attnviz/native.py > attnviz/native.py
    echo "$(date -u +%H:%M:%S) recheck $v run$r $(cut -d' ' -f1-3 /proc/loadavg)" >> $D/load.txt
    chrt -f 10 .venv/bin/python -m attnviz.bench --device cpu --threads 1 --methods fused --rounds 11 --json --sizes 6x1024x1024,1x65536x1024 > $D/recheck_${v}_run$r.jsonl 2> $D/recheck_${v}_run$r.err
  done
done
git checkout attnviz/csrc/weighted_rows.c attnviz/native.py
