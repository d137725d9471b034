"""What a shape's first call chose (asking for lines ahead or not), and which way was faster after.

    python benchmarks/runs/issue32y/ahead_choice.py 4x128x4096 8x128x2048 ...

One thread. For each shape (BxTxH): the library's first call (``native.weighted_rows``, which
times both ways and keeps one), then 40 calls of each way alternating, through ctypes. Prints the
choice and plain/ahead: the time without asking ahead over the time asking (fastest and median
call); under 1, plain loads were the faster.
"""

import statistics
import sys
import time

import torch

from attnviz import native, native_build


def main(shapes: list[str]) -> None:
    lib = native_build._build()[1]
    torch.set_num_threads(1)
    lines = []
    for text in shapes:
        b, t, h = (int(v) for v in text.split("x"))
        x, w = torch.randn(b, t, h), torch.rand(b, t)
        native.weighted_rows(x, w, threads=1)  # the first call: times both ways, keeps one
        chose = native.asks_ahead(b, t, h, 1)
        out = torch.empty(b, h)
        args = (x.data_ptr(), w.data_ptr(), out.data_ptr(), out.data_ptr())
        ways = [native._call_shape(b, t, h, 1, *native._limits(), ahead=a)[0] for a in (0, 1)]
        took: list[list[float]] = [[], []]
        for _ in range(40):
            for i, shape in enumerate(ways):
                t0 = time.perf_counter()
                lib.weighted_rows_f32(*args, shape)
                took[i].append(time.perf_counter() - t0)
        fastest = min(took[0]) / min(took[1])
        median = statistics.median(took[0]) / statistics.median(took[1])
        lines.append(f"{text} chose_ahead={chose} plain/ahead min {fastest:.3f} med {median:.3f}")
    print("\n".join(lines))  # after every timing: printing in between would disturb them


if __name__ == "__main__":
    main(sys.argv[1:])
