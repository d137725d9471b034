"""Words to numbers: the tokenizer, the vocabulary and a padded batch of ids with its mask.

    vocab = Vocabulary.of(corpus.load())
    ids, mask = vocab.encode_batch([["the", "film", "was", "good"]], length=16)  # (1, 16), (1, 16)

Id 0 is padding, id 1 an unknown word. A visitor's sentence goes through ``tokenize``, which keeps
lower-case ASCII words and refuses text that is too long, with a plain message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnviz.errors import AttnvizError
from attnviz.pooling.corpus import MAX_WORDS, Sentence

PAD, UNK = "<pad>", "<unk>"
MAX_CHARS = 200
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def tokenize(text: str, *, max_words: int = MAX_WORDS, max_chars: int = MAX_CHARS) -> list[str]:
    """A sentence -> its lower-case words (letters and an apostrophe; everything else separates).

    Raises AttnvizError for text longer than ``max_chars`` characters or ``max_words`` words, or
    with no word at all.
    """
    if not isinstance(text, str):
        raise AttnvizError("A sentence must be text.")
    if len(text) > max_chars:
        raise AttnvizError(
            f"That sentence has {len(text)} characters; at most {max_chars} are allowed."
        )
    words = _WORD.findall(text.lower())
    if not words:
        raise AttnvizError("Type a sentence with at least one word (letters a-z).")
    if len(words) > max_words:
        raise AttnvizError(
            f"That sentence has {len(words)} words; the model reads at most {max_words}. "
            f"Shorten it."
        )
    return words


@dataclass(frozen=True)
class Vocabulary:
    """The known words, in a fixed order: ``words[0]`` is padding, ``words[1]`` unknown."""

    words: tuple[str, ...]

    @classmethod
    def of(cls, sentences: Iterable[Sentence]) -> Vocabulary:
        """Every word of ``sentences``, sorted, after PAD and UNK."""
        known = sorted({w for s in sentences for w in s.text.split()})
        return cls((PAD, UNK, *known))

    def __len__(self) -> int:
        return len(self.words)

    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.words)}

    def unknown(self, words: Sequence[str]) -> list[str]:
        """The words of ``words`` the vocabulary does not know (read as UNK by the model)."""
        known = set(self.words)
        return [w for w in words if w not in known]

    def encode_batch(
        self, sentences: Sequence[Sequence[str]], *, length: int = MAX_WORDS
    ) -> tuple[Tensor, Tensor]:
        """Word lists -> ids (B, T) int64, padded with 0, and mask (B, T) bool, True on real words.

        T is ``length``; a longer sentence raises AttnvizError.
        """
        index = self.index()
        ids = torch.zeros(len(sentences), length, dtype=torch.int64)  # (B, T)
        for b, words in enumerate(sentences):
            if len(words) > length:
                raise AttnvizError(
                    f"Sentence {b} has {len(words)} words; the batch holds at most {length}."
                )
            ids[b, : len(words)] = torch.tensor([index.get(w, 1) for w in words], dtype=torch.int64)
        return ids, ids != 0  # (B, T), (B, T)
