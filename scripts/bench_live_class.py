"""Server CPU of the live class: one follow-mode poll and one answer, on SQLite and on Redis.

    .venv/bin/python scripts/bench_live_class.py [--runs 40]

Two levels, side by side in one run:
- the store: CPU seconds of this process for ``Classroom.state`` (what a poll reads) and
  ``Classroom.answer`` (one answer recorded), SQLite file vs a redis-server it starts itself
  (the Redis server's own CPU is read from INFO, per operation);
- the page: the polling fragment's body (store read + what it draws) and the answer callback,
  timed with ``time.process_time`` inside the app (``live_class.LAST_POLL_CPU`` /
  ``LAST_ANSWER_CPU``) through AppTest, and a whole Walkthrough rerun for comparison.
Medians of --runs; this machine's load moves them, so compare within one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attnviz import examples  # noqa: E402
from attnviz.classroom import Classroom, Limits, open_store, questions  # noqa: E402
from attnviz.classroom.redis_store import RedisStore  # noqa: E402


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def store_costs(store, runs: int) -> tuple[float, float]:
    room = Classroom(store, Limits(answers_per_student_per_min=10**6))
    started = room.start()
    q = next(q for q in questions(*examples.classic()) if q.id == "sum_axis")
    room.join(started.code, "a" * 16)
    room.ask(started.code, started.token, q)
    polls, answers = [], []
    for i in range(runs):
        t = time.process_time()
        room.state(started.code)
        polls.append(time.process_time() - t)
        t = time.process_time()
        room.answer(started.code, "a" * 16, q, str(i % 3))
        answers.append(time.process_time() - t)
    return _median_us(polls), _median_us(answers)


def redis_server_cpu_us(store: RedisStore, op, runs: int) -> float:
    before = store._r.info("cpu")
    for i in range(runs):
        op(i)
    after = store._r.info("cpu")
    used = sum(after[k] - before[k] for k in ("used_cpu_sys", "used_cpu_user"))
    return used / runs * 1e6


def page_costs(runs: int) -> tuple[float, float, float]:
    from streamlit.testing.v1 import AppTest
    from streamlit.util import calc_hash

    def app(params=None):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        for k, v in (params or {}).items():
            at.query_params[k] = v
        at._page_hash = calc_hash("walkthrough")
        at.run()
        return at

    teacher = app()
    teacher.button(key="wt_start").click().run()
    code = teacher.session_state["wt_code"]
    for _ in range(6):  # to the sum slide
        teacher.button(key="wt_next").click().run()
    teacher.button(key="wt_ask_sum_axis").click().run()
    student = app({"class": code})
    polls, answers, reruns = [], [], []
    for i in range(runs):
        t = time.process_time()
        student.run()
        reruns.append(time.process_time() - t)
        polls.append(student.session_state["wt_poll_cpu"])
        if i < 25:  # the per-student answer limit is 30 a minute
            student.radio(key="wt_pick_sum_axis").set_value(str(i % 3))
            student.button(key="wt_send_sum_axis").click().run()
            answers.append(student.session_state["wt_answer_cpu"])
    return _median_us(polls), _median_us(answers), _median_us(reruns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="attnviz-bench-live-"))
    os.environ["ATTNVIZ_DATA_DIR"] = str(folder / "data")
    os.environ.pop("ATTNVIZ_CLASS_STORE", None)
    sqlite = open_store(data_dir=folder / "sqlite")
    print(f"runs: {args.runs} (medians, CPU microseconds of this process)")
    poll, answer = store_costs(sqlite, args.runs * 10)
    print(f"store  sqlite   poll {poll:8.1f} us   answer {answer:8.1f} us")
    from scripts.redis_server import RedisServer

    server = RedisServer(folder / "redis")
    server.start()
    try:
        redis = RedisStore(server.url)
        poll, answer = store_costs(redis, args.runs * 10)
        print(f"store  redis    poll {poll:8.1f} us   answer {answer:8.1f} us  (client side)")
        room = Classroom(redis, Limits(answers_per_student_per_min=10**6))
        started = room.start()
        q = next(q for q in questions(*examples.classic()) if q.id == "sum_axis")
        room.join(started.code, "b" * 16)
        room.ask(started.code, started.token, q)
        n = args.runs * 10
        srv_poll = redis_server_cpu_us(redis, lambda i: room.state(started.code), n)
        srv_answer = redis_server_cpu_us(
            redis, lambda i: room.answer(started.code, "b" * 16, q, str(i % 3)), n
        )
        print(
            f"store  redis    poll {srv_poll:8.1f} us   answer {srv_answer:8.1f} us  (redis-server)"
        )
    finally:
        server.stop()
    poll, answer, rerun = page_costs(args.runs)
    print(
        f"page   sqlite   poll {poll:8.1f} us   answer {answer:8.1f} us  (fragment body / callback)"
    )
    print(f"page   sqlite   a whole Walkthrough rerun (AppTest, for comparison): {rerun:8.1f} us")


if __name__ == "__main__":
    main()
