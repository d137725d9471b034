"""python -m attnviz.grade SUBMISSIONS... [--out FOLDER] [--lesson NAME] [--lessons FOLDER]

Grades every notebook named (or inside a folder named) and writes FOLDER/gradebook.csv and
FOLDER/summary.csv (default: grades/), then prints the summary. Exit status 0 when it graded,
2 when it could not start (a missing file, no released notebooks): the message says why.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from attnviz.errors import AttnvizError
from attnviz.grade.book import summarise, summary_text, write
from attnviz.grade.collect import Submission, catalogue, default_lessons, imports, read_submissions
from attnviz.grade.run import Limits, grade


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m attnviz.grade",
        description="Grade the students' notebooks: a gradebook and a class summary (CSV).",
    )
    p.add_argument("submissions", nargs="+", type=Path, help="notebooks, or folders of them")
    p.add_argument("--out", type=Path, default=Path("grades"), help="where the CSV files go")
    p.add_argument("--lesson", default="", help="grade every notebook as this lesson")
    p.add_argument(
        "--lessons",
        type=Path,
        default=default_lessons(),
        help="the released student notebooks (default: this checkout's lessons/)",
    )
    p.add_argument("--seconds", type=float, default=Limits.seconds, help="per exercise")
    p.add_argument("--wall", type=float, default=Limits.wall, help="per exercise, waiting too")
    p.add_argument("--memory-mb", type=int, default=Limits.memory_mb, help="per notebook")
    p.add_argument("--jobs", type=int, default=0, help="notebooks at a time (default: CPUs)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if min(args.seconds, args.wall, args.memory_mb) <= 0 or args.jobs < 0:
        print(
            "--seconds, --wall and --memory-mb must be positive, --jobs zero or more.",
            file=sys.stderr,
        )
        return 2
    try:
        lessons = catalogue(args.lessons)
        submissions = read_submissions(args.submissions, lessons, args.lesson)
    except AttnvizError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not submissions:
        print("No notebook (.ipynb) found in what you named.", file=sys.stderr)
        return 2
    start = time.monotonic()
    limits = Limits(seconds=args.seconds, wall=args.wall, memory_mb=args.memory_mb)
    done = []

    def progress(sub: Submission) -> None:
        done.append(sub)
        shown = "".join(c if c.isprintable() else "?" for c in str(sub.path))  # no escapes
        print(f"[{len(done)}/{len(submissions)}] {shown}", file=sys.stderr)

    rows, facts = grade(
        submissions, lessons, limits, args.jobs, progress, preload=imports(args.lessons)
    )
    book, summary = write(rows, args.out)
    print(summary_text(summarise(rows)))
    confined = (
        f"Landlock ABI {facts['landlock']}" if facts["landlock"] else "no Landlock on this kernel"
    )
    print(
        f"\n{len(submissions)} notebooks graded in {time.monotonic() - start:.1f} s "
        f"({confined}). Gradebook: {book}. Summary: {summary}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
