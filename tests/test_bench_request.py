"""attnviz.bench.request: what a browser may ask the Performance page to time, each method once,
a forged request refused without echoing it, and sizes clamped to the offered ones."""

import re

import pytest

from attnviz import AttnvizError
from attnviz.bench import request

# --- a request from the browser ---

OFFERED = request.offered_sizes(512 * 2**20)


@pytest.mark.parametrize(
    ("methods", "want"),
    [
        (["einsum"] * 20, ("einsum",)),
        (["bmm", "einsum", "bmm", "einsum"], ("bmm", "einsum")),
        (("fused",), ("fused",)),
    ],
)
def test_request_keeps_each_method_once_in_order(methods, want):
    spec = request.parse_request("cpu", (2, 3, 5), methods, devices=["cpu"], sizes=OFFERED)
    assert spec.methods == want


@pytest.mark.parametrize(
    ("device", "size", "methods", "says"),
    [
        ("cuda:7", (2, 3, 5), ["bmm"], "device must be one of cpu"),
        (["cpu"], (2, 3, 5), ["bmm"], "device must be one of cpu"),
        ("cpu", "2x3x5", ["bmm"], "offered B × T × H"),
        ("cpu", (2, 3, True), ["bmm"], "offered B × T × H"),
        ("cpu", (2, 3, 5, 7), ["bmm"], "offered B × T × H"),
        ("cpu", (0, 3, 5), ["bmm"], "at least 1"),
        ("cpu", (2, 3, 5), ["einsum"] * 300, "picked from the list"),
        ("cpu", (2, 3, 5), "bmm", "picked from the list"),
        ("cpu", (2, 3, 5), ["<b>bold</b>"], "must be one of"),
        ("cpu", (2, 3, 5), [3], "must be one of"),
        ("cpu", (64, 1024, 1024), ["loop"], "must be one of"),
        ("cpu", (2, 3, 5), [], "at least one method"),
    ],
)
def test_forged_request_gives_a_plain_message_without_the_visitors_text(
    device, size, methods, says
):
    with pytest.raises(AttnvizError, match=re.escape(says)) as e:
        request.parse_request(device, size, methods, devices=["cpu"], sizes=OFFERED)
    assert "<b>" not in str(e.value) and "cuda:7" not in str(e.value)


@pytest.mark.parametrize(
    ("size", "want"),
    [
        ((4096, 4096, 4096), OFFERED[-1]),  # larger than anything offered: the largest
        ((3, 3, 5), (2, 3, 5)),  # between two offered sizes: the one below
        ((1, 1, 1), (2, 3, 5)),  # below every offered size: the smallest
        ([4, 16, 32], (4, 16, 32)),  # a list, as JSON sends it
    ],
)
def test_a_size_not_offered_is_clamped_to_an_offered_one(size, want):
    assert request.parse_size(size, OFFERED) == want


def test_offered_methods_leave_out_the_loop_at_large_sizes():
    assert "loop" in request.offered_methods((2, 3, 5))
    assert "loop" not in request.offered_methods((64, 1024, 1024))
