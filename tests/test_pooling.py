"""The sentiment corpus, its tokenizer and vocabulary, and the pooling model's parts, against
oracles: the plain loop, float64, and a label rule written independently of the grammar."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnviz.errors import AttnvizError
from attnviz.pooling import corpus
from attnviz.pooling.model import (
    POOLINGS,
    PoolingClassifier,
    last_weights,
    masked_softmax,
    mean_weights,
    pool,
    pool_trap,
)
from attnviz.pooling.vocab import MAX_CHARS, Vocabulary, tokenize

DATA = Path(__file__).resolve().parents[1] / "attnviz" / "data" / corpus.DATA_FILE


def _rule_label(words: list[str]) -> int:
    """The label from the words alone: polarity of the sentiment word, flipped by a negation
    one or two words before it; neutral without a sentiment word."""
    found = [i for i, w in enumerate(words) if w in corpus.POSITIVE + corpus.NEGATIVE]
    if not found:
        return corpus.NEUTRAL_LABEL
    (i,) = found
    positive = words[i] in corpus.POSITIVE
    negated = any(j >= 0 and words[j] in corpus.NEGATORS for j in (i - 1, i - 2))
    return int(positive != negated)


# ---- the corpus ---------------------------------------------------------------------------------


def test_shipped_file_is_the_grammar_output():
    assert DATA.read_text(encoding="ascii") == corpus.to_tsv(corpus.generate())


def test_shipped_file_is_small():
    assert DATA.stat().st_size < 300 * 1024


def test_generate_is_deterministic_and_seeded():
    assert corpus.generate(3, 50) == corpus.generate(3, 50)
    assert corpus.generate(3, 50) != corpus.generate(4, 50)


def test_sentences_are_distinct_and_fit_the_model():
    sentences = corpus.load()
    assert len(sentences) == corpus.SIZE
    assert len({s.text for s in sentences}) == len(sentences)
    assert max(len(s.text.split()) for s in sentences) <= corpus.MAX_WORDS


def test_every_label_follows_the_rule():
    wrong = [s for s in corpus.load() if s.label != _rule_label(s.text.split())]
    assert wrong == []


def test_labels_are_balanced():
    counts = [sum(s.label == k for s in corpus.load()) for k in range(len(corpus.LABELS))]
    assert min(counts) > 0.3 * corpus.SIZE


def test_sentiment_word_moves_through_the_sentence():
    positions = {corpus.key_positions(s.text.split())[-1] for s in corpus.load() if s.label != 2}
    assert len(positions) >= 8


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("it was a good film", [3]),
        ("i found the plot not dull at all", [4, 5]),
        ("it was never a dull film", [2, 4]),
        ("i found the film on sunday", []),
        ("well it was a superb movie", [4]),
    ],
)
def test_key_positions(text, keys):
    assert corpus.key_positions(text.split()) == keys


def test_tsv_round_trip():
    sentences = corpus.generate(1, 20)
    assert corpus.from_tsv(corpus.to_tsv(sentences)) == sentences


# ---- words to ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("The film was NOT good!", ["the", "film", "was", "not", "good"]),
        ("it's  great,really", ["it's", "great", "really"]),
        ("<b>bad</b> 42", ["b", "bad", "b"]),
    ],
)
def test_tokenize(text, words):
    assert tokenize(text) == words


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("x" * (MAX_CHARS + 1), "characters"),
        ("word " * (corpus.MAX_WORDS + 1), "words"),
        ("123 !!!", "at least one word"),
        (None, "text"),
    ],
)
def test_tokenize_refuses_with_a_plain_message(text, needle):
    with pytest.raises(AttnvizError, match=needle):
        tokenize(text)


def test_encode_batch_pads_masks_and_reads_unknown_words():
    vocab = Vocabulary(("<pad>", "<unk>", "film", "good"))
    ids, mask = vocab.encode_batch([["good", "film"], ["zebra"]], length=4)
    assert ids.tolist() == [[3, 2, 0, 0], [1, 0, 0, 0]]
    assert mask.tolist() == [[True, True, False, False], [True, False, False, False]]
    assert vocab.unknown(["zebra", "film"]) == ["zebra"]


def test_encode_batch_refuses_a_long_sentence():
    with pytest.raises(AttnvizError, match="3 words"):
        Vocabulary(("<pad>", "<unk>")).encode_batch([["a", "b", "c"]], length=2)


def test_vocabulary_knows_every_corpus_word():
    sentences = corpus.load()
    vocab = Vocabulary.of(sentences)
    assert vocab.words[:2] == ("<pad>", "<unk>")
    assert all(not vocab.unknown(s.text.split()) for s in sentences)


# ---- the model's parts --------------------------------------------------------------------------


def _inputs(b=3, t=5, h=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, h, generator=g, dtype=torch.float64)
    s = torch.randn(b, t, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, t + 1, (b,), generator=g)
    mask = torch.arange(t)[None, :] < lengths[:, None]
    return x, s, mask


@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 4, 4), (1, 1, 3)])
def test_masked_softmax_matches_the_loop(shape):
    _, s, mask = _inputs(*shape)
    got = masked_softmax(s, mask)
    want = torch.zeros_like(s)
    for b in range(s.shape[0]):
        real = [t for t in range(s.shape[1]) if mask[b, t]]
        exps = [float(torch.exp(s[b, t])) for t in real]
        for t, e in zip(real, exps, strict=True):
            want[b, t] = e / sum(exps)
    torch.testing.assert_close(got, want)


def test_masked_softmax_of_no_word_is_zeros():
    got = masked_softmax(torch.randn(2, 3), torch.zeros(2, 3, dtype=torch.bool))
    assert torch.equal(got, torch.zeros(2, 3))


@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 4, 4)])
def test_pool_matches_the_loop(shape):
    x, s, mask = _inputs(*shape)
    w = masked_softmax(s, mask)
    want = torch.stack(
        [sum(w[b, t] * x[b, t] for t in range(x.shape[1])) for b in range(x.shape[0])]
    )
    torch.testing.assert_close(pool(x, w), want)


def test_mean_and_last_weights():
    _, s, mask = _inputs(4, 6, 3)
    lengths = mask.sum(1)
    torch.testing.assert_close(mean_weights(s, mask).sum(1), torch.ones(4, dtype=s.dtype))
    assert torch.equal(mean_weights(s, mask)[~mask], torch.zeros(int((~mask).sum()), dtype=s.dtype))
    last = last_weights(s, mask)
    assert last.sum(1).tolist() == [1.0] * 4
    assert last.argmax(1).tolist() == (lengths - 1).tolist()


def test_trap_scales_the_hidden_axis_at_t_equal_h():
    x, s, mask = _inputs(3, 4, 4)
    w = masked_softmax(s, mask)
    want = x.sum(1) * w  # sum over words, then each hidden feature h times the weight of word h
    torch.testing.assert_close(pool_trap(x, w), want)
    assert not torch.allclose(pool_trap(x, w), pool(x, w))


def test_trap_refuses_t_unequal_h_naming_shapes():
    x, s, mask = _inputs(2, 3, 5)
    with pytest.raises(AttnvizError, match=r"\(2, 3, 5\).*T == H"):
        pool_trap(x, masked_softmax(s, mask))


@pytest.mark.parametrize("name", ["attention", "mean", "last"])
def test_padding_changes_nothing(name):
    torch.manual_seed(0)
    model = PoolingClassifier(12, name, hidden=6).eval()
    ids = torch.tensor([[3, 5, 7, 0, 0], [4, 2, 0, 0, 0]])
    more = torch.cat([ids, torch.zeros(2, 4, dtype=torch.int64)], dim=1)  # (2, 9)
    a, wa = model(ids, ids != 0)
    b, wb = model(more, more != 0)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(wa, wb[:, :5])


@pytest.mark.parametrize("name", sorted(POOLINGS))
def test_every_pooling_gives_weights_that_sum_to_one(name):
    torch.manual_seed(1)
    model = PoolingClassifier(12, name, hidden=5).eval()
    ids = torch.tensor([[3, 5, 7, 2, 0], [4, 2, 0, 0, 0]])
    logits, w = model(ids, ids != 0)
    assert logits.shape == (2, 3) and w.shape == (2, 5)
    torch.testing.assert_close(w.sum(1), torch.ones(2))
    assert torch.equal(w[ids == 0], torch.zeros(int((ids == 0).sum())))


def test_unknown_pooling_names_the_choices():
    with pytest.raises(AttnvizError, match="attention, mean, last, trap"):
        PoolingClassifier(5, "max")
