"""Run attnviz.bench with the plan told the last-level cache is LLC_MIB (argv[1]) MiB."""

import runpy
import sys

from attnviz import native

mib = float(sys.argv[1])
l2 = native._caches()[0]
native._caches = lambda: (l2, int(mib * 2**20))
sys.argv = ["attnviz.bench", *sys.argv[2:]]
runpy.run_module("attnviz.bench", run_name="__main__")
