"""attnviz: see attention-weighted aggregation through broadcasting, step by step.

    weighted = (net_output * att_scores[..., None]).sum(axis=1)   # (B,T,H) * (B,T,1) -> (B,H)

The core (examples, aggregation, trace, sandbox, bench, exercises) needs torch and numpy only;
``attnviz.figures`` adds plotly; only ``attnviz.ui`` imports streamlit.
"""

from attnviz import examples, trace
from attnviz.aggregation import (
    METHODS,
    attention_weights,
    check_inputs,
    compare_methods,
    reference,
    weighted_sum,
)
from attnviz.errors import AttnvizError

__all__ = [
    "METHODS",
    "AttnvizError",
    "attention_weights",
    "check_inputs",
    "compare_methods",
    "examples",
    "trace",
    "reference",
    "weighted_sum",
]
__version__ = "0.1.0"
