"""Write attnviz/data/sentiment.tsv: the sentiment corpus from its grammar (attnviz/pooling/corpus.py).

    python scripts/make_sentiment_corpus.py          # rewrite the file
    python scripts/make_sentiment_corpus.py --check  # exit 1 if the file differs from the grammar

The same seed (corpus.SEED) and size (corpus.SIZE) always give the same file, byte for byte.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attnviz.pooling import corpus

PATH = Path(__file__).resolve().parents[1] / "attnviz" / "data" / corpus.DATA_FILE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    text = corpus.to_tsv(corpus.generate(corpus.SEED, corpus.SIZE))
    if args.check:
        same = PATH.exists() and PATH.read_text(encoding="ascii") == text
        print(f"{PATH.name}: {'matches' if same else 'DIFFERS FROM'} the grammar")
        return 0 if same else 1
    PATH.write_text(text, encoding="ascii")
    print(f"wrote {PATH} ({len(text.encode())} bytes, {corpus.SIZE} sentences)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
