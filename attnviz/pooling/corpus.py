"""The sentiment corpus: short English sentences from a small grammar, made with a fixed seed.

Three labels (``LABELS`` order): 0 negative, 1 positive, 2 neutral. A sentence is one of two
frames, "it was (not) a good film" or "i found the story (not) good", between neutral filler
("to be honest", "on sunday", "my friend kelmora said", "in stazil"):

- an opinion has one sentiment word (``POSITIVE`` or ``NEGATIVE``), negated half of the time by
  the word just before it or the one before that ("not good", "never a dull film"); the label is
  the word's polarity, flipped by a negation;
- a neutral sentence is the same frame without a sentiment word ("i found the story on sunday",
  "it was a film for kelmora"): no word of its own tells it apart, so a model that recognises
  neutral by the absence of an opinion must find the opinion where there is one.

So the word that decides the label moves from sentence to sentence, and most words carry nothing.
The filler names are made up (``NAMES`` of them, each in a few sentences): rare words whose
embeddings barely train, noise that a mean adds into every sentence and attention can ignore.

The shipped file ``attnviz/data/sentiment.tsv`` (``label<TAB>sentence`` a line, ~170 KB) is
``generate(SEED, SIZE)``, written by ``python scripts/make_sentiment_corpus.py``; the tests check
that the file and the grammar agree, byte for byte.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from importlib import resources

SEED = 20261202
SIZE = 3000
DATA_FILE = "sentiment.tsv"
#: the longest sentence the grammar makes, in words (the model pads every sentence to this)
MAX_WORDS = 20

POSITIVE = (
    "good",
    "great",
    "wonderful",
    "excellent",
    "brilliant",
    "lovely",
    "superb",
    "delightful",
    "charming",
    "clever",
    "funny",
    "moving",
)
NEGATIVE = (
    "bad",
    "awful",
    "terrible",
    "boring",
    "dull",
    "poor",
    "weak",
    "clumsy",
    "tedious",
    "bland",
    "dreadful",
    "messy",
)
NEGATIVE_LABEL, POSITIVE_LABEL, NEUTRAL_LABEL = 0, 1, 2
LABELS = ("negative", "positive", "neutral")
NEGATORS = ("not", "never", "hardly")
SUBJECTS = (
    "the film",
    "the movie",
    "the plot",
    "the acting",
    "the story",
    "the ending",
    "the cast",
    "the music",
    "the script",
    "this show",
    "the dialogue",
    "the sequel",
)
NOUNS = ("film", "movie", "story", "show", "sequel", "script", "cast", "ending")
PREFIXES = (
    "to be honest",
    "in the end",
    "honestly",
    "i think",
    "for me",
    "my friends said",
    "on sunday",
    "at the cinema",
    "after all that",
    "as expected",
    "in my view",
    "well",
    "so",
    "overall",
    "my sister thought",
)
SUFFIXES = (
    "at all",
    "to me",
    "overall",
    "in my opinion",
    "for a sunday afternoon",
    "if you ask me",
    "this year",
    "from start to finish",
    "as far as i can tell",
    "for the most part",
    "again",
    "in places",
)


_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kr", "st")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
_CODAS = ("", "n", "r", "s", "l", "th")
#: templates of filler with a proper name (``{}``): names are an open class, each one rare
NAMED_PREFIXES = (
    "my friend {} said",
    "in {} last week",
    "at the {} cinema",
    "{} told me that",
    "after dinner in {}",
    "according to {}",
)
NAMED_SUFFIXES = ("says {}", "for {}", "in {}", "according to {}", "unlike the one in {}")


def _name(rng: random.Random) -> str:
    """A made-up proper name of two or three syllables (``kelmora``, ``strizath``)."""
    n = rng.choice((2, 2, 3))
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(n)) + rng.choice(_CODAS)


@dataclass(frozen=True)
class Sentence:
    """One labelled sentence: ``label`` 0 negative, 1 positive, 2 neutral; ``text`` lower-case
    words separated by single spaces."""

    label: int
    text: str


def _maybe(rng: random.Random, p: float, options: tuple[str, ...]) -> list[str]:
    return rng.choice(options).split() if rng.random() < p else []


NAMES = 150  # how many made-up names the corpus draws from: each appears a few times


def _names() -> tuple[str, ...]:
    """The corpus's ``NAMES`` made-up names, the same every time (their own seed)."""
    rng = random.Random(SEED + 1)
    out: list[str] = []
    while len(out) < NAMES:
        name = _name(rng)
        if name not in out and name not in NEGATORS + POSITIVE + NEGATIVE:
            out.append(name)
    return tuple(out)


_NAME_LIST = _names()


def _pick_name(rng: random.Random) -> str:
    return rng.choice(_NAME_LIST)


def _sentence(rng: random.Random) -> Sentence:
    label = rng.randrange(3)  # NEGATIVE_LABEL, POSITIVE_LABEL, NEUTRAL_LABEL
    negated = label != NEUTRAL_LABEL and rng.random() < 0.5
    negation = [rng.choice(NEGATORS)] if negated else []
    opinion = [] if label == NEUTRAL_LABEL else [rng.choice((NEGATIVE, POSITIVE)[label])]
    if rng.random() < 0.5:  # it was (not) a good film / it was a film
        body = ["it", "was", *negation, "a", *opinion, rng.choice(NOUNS)]
    else:  # i found the film (not) good / i found the film
        body = ["i", "found", *rng.choice(SUBJECTS).split(), *negation, *opinion]
    suffixes = SUFFIXES if negated else SUFFIXES[1:]  # "at all" only after a negation
    prefix = _maybe(rng, 0.5, PREFIXES)
    if rng.random() < 0.5:
        prefix = [*rng.choice(NAMED_PREFIXES).format(_pick_name(rng)).split(), *prefix]
    suffix = _maybe(rng, 0.5, suffixes)
    if rng.random() < 0.4:
        suffix += rng.choice(NAMED_SUFFIXES).format(_pick_name(rng)).split()
    words = [*prefix, *body, *suffix]
    if negated:
        label = 1 - label
    return Sentence(label, " ".join(words))


def generate(seed: int = SEED, size: int = SIZE) -> list[Sentence]:
    """``size`` distinct sentences from the grammar, in the order a ``random.Random(seed)`` makes them."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[Sentence] = []
    while len(out) < size:
        s = _sentence(rng)
        if s.text not in seen and len(s.text.split()) <= MAX_WORDS:
            seen.add(s.text)
            out.append(s)
    return out


def to_tsv(sentences: list[Sentence]) -> str:
    """The file's text: ``label<TAB>sentence`` a line."""
    return "".join(f"{s.label}\t{s.text}\n" for s in sentences)


def from_tsv(text: str) -> list[Sentence]:
    """Parse ``to_tsv``'s text back."""
    out = []
    for line in text.splitlines():
        label, sentence = line.split("\t")
        out.append(Sentence(int(label), sentence))
    return out


def load() -> list[Sentence]:
    """The shipped corpus (``attnviz/data/sentiment.tsv``)."""
    text = resources.files("attnviz").joinpath("data", DATA_FILE).read_text(encoding="ascii")
    return from_tsv(text)


def key_positions(words: list[str]) -> list[int]:
    """Indices of the words that decide the label: the sentiment word and a negation one or two
    words before it (none for a neutral sentence)."""
    keys = [i for i, w in enumerate(words) if w in POSITIVE or w in NEGATIVE]
    out = list(keys)
    for i in keys:
        out += [j for j in (i - 1, i - 2) if j >= 0 and words[j] in NEGATORS]
    return sorted(set(out))
