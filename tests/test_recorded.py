"""The GPU run shipped with attnviz (attnviz/data/gpu_check.json): what the Performance page and
lesson 03 say about a GPU is computed from its records, and it agrees with today's dispatch."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from attnviz import fused
from attnviz.bench import recorded

ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_run_says_when_and_where_it_ran_and_that_every_check_passed():
    run = recorded.gpu_check()
    assert run["environment"]["device"].startswith("cuda")
    assert recorded.where().startswith(f"an {run['environment']['device_name']} (torch ")
    assert run["measured_at"] in recorded.where()
    assert run["correctness"]["passed"] == run["correctness"]["total"] > 100


def test_the_summary_is_computed_from_the_records_not_typed():
    run = copy.deepcopy(recorded.gpu_check())
    before = recorded.summary(run)
    big = max(run["records"], key=lambda r: r["bytes"])
    for r in run["records"]:
        if r["shape"] == big["shape"] and r["dtype"] == big["dtype"] and r["method"] == "fused":
            r["gbps"] /= 2  # half the speed: the sentence must say so
    after = recorded.summary(run)
    assert before != after and "50.5%" in after  # 101% of the copy before


def test_rows_cover_every_size_and_method_and_compare_with_the_copy():
    rows = recorded.rows()
    sizes = {(r["shape"], r["dtype"]) for r in rows}
    assert len(rows) == len(sizes) * len(recorded.METHODS)
    assert all(r["of the copy's bandwidth"] == "100%" for r in rows if r["method"] == "copy")


def test_fused_on_the_gpu_ran_what_fused_runs_on_cuda_today():
    assert fused.choose_method("cuda", (8, 16384, 1024), torch.float32) == "bmm"
    assert {r["runs"] for r in recorded.rows() if r["method"] == "fused"} == {"bmm"}


def test_ship_keeps_what_the_page_reads(tmp_path):
    source = tmp_path / "gpu_check.json"
    full = dict(recorded.gpu_check())
    n = full["correctness"]["total"]
    full["correctness"] = [{"ok": True}] * (n - 1) + [{"ok": False}]
    full["tuning"] = [{"config": {}}]  # left behind
    source.write_text(json.dumps(full))
    shipped = json.loads(recorded.ship(source, "2030-01-01", tmp_path / "out.json").read_text())
    assert shipped["correctness"] == {"passed": n - 1, "total": n} and "tuning" not in shipped
    assert recorded.where(shipped).endswith("2030-01-01")
    assert recorded.summary(shipped).endswith(
        f"{n - 1} of {n} correctness checks against float64 passed."
    )


def test_ship_takes_the_date_the_run_wrote_and_refuses_a_run_without_one(tmp_path):
    full = dict(recorded.gpu_check(), correctness=[{"ok": True}])
    source = tmp_path / "gpu_check.json"
    source.write_text(json.dumps(full))  # the shipped file: it carries measured_at
    shipped = json.loads(recorded.ship(source, target=tmp_path / "a.json").read_text())
    assert shipped["measured_at"] == recorded.gpu_check()["measured_at"]
    del full["measured_at"]
    source.write_text(json.dumps(full))
    with pytest.raises(SystemExit, match="give the date"):
        recorded.ship(source, target=tmp_path / "b.json")
