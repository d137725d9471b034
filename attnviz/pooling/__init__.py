"""Where the scores come from: attention pooling trained on real sentences (torch and numpy only).

    from attnviz.pooling import TrainConfig, prepare, train, predict
    data = prepare()                                     # the shipped corpus, split, as ids
    run = train(TrainConfig(pooling="attention"), data)  # ~1.5 CPU-s on one thread
    run.accuracies[-1], run.key_hit                      # held-out accuracy; share of held-out
                                                         # opinions whose top weight is the word
                                                         # that decides them
    predict(run, "it was not a dull film")               # words, probabilities, weights

- ``corpus``: the sentences and the grammar that made them (``attnviz/data/sentiment.tsv``);
- ``vocab``: the tokenizer (which also bounds a visitor's sentence) and the vocabulary;
- ``model``: ``PoolingClassifier`` and ``POOLINGS`` (attention, mean, last word, and the
  ``att_scores[:, None]`` trap that runs at T == H);
- ``train``: ``TrainConfig``, ``train``, ``predict``;
- ``worker``: training in a bounded separate process (CPU time, memory), for a public server.
"""

from attnviz.pooling.model import POOLINGS, PoolingClassifier
from attnviz.pooling.train import TrainConfig, TrainRun, predict, prepare, train

__all__ = [
    "POOLINGS",
    "PoolingClassifier",
    "TrainConfig",
    "TrainRun",
    "predict",
    "prepare",
    "train",
]
