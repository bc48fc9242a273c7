"""``python -m benchmarks.held REV [NAME ...]``: figures held across a change, before and after in one run.

A refactor must not cost speed, and on a shared machine two runs an hour apart do not compare.
This checks out ``REV`` (the "before") in a temporary git worktree and runs each named
benchmark (default: parse, cli, airflow, memory, deployment: the DAG-file parse, ``--help``,
the 20,000-question and demo DAG runs, peak memory, the SciFact deployment) from each tree in
turn, before then after, with the same interpreter: each tree imports its own package
(``PYTHONPATH``) and runs its own benchmark code. It prints each row's figure before and
after, the ratio after/before of the figures, and each row's own ratio (against the anchor it
measures, which the load affects less) before and after.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, load

HELD = ("parse", "cli", "airflow", "memory", "deployment")
# a row: benchmark, ours, reference, ratio, target, result, load (columns two spaces apart)
ROW = re.compile(
    r"^(?P<name>\S.*?)\s{2,}(?P<ours>\S.*?)\s{2,}(?P<ref>\S.*?)\s{2,}(?P<ratio>[\d.]+|–)\s"
)


def figure(text: str) -> float | None:
    """The first number of a cell (``1,234.5 q/s`` → 1234.5), None for a dash."""
    found = re.search(r"[\d,]*\.?\d+", text)
    return float(found.group().replace(",", "")) if found else None


def rows_of(output: str) -> dict[str, tuple[str, float | None]]:
    """Each table row's figure cell and its own ratio, by benchmark name."""
    rows: dict[str, tuple[str, float | None]] = {}
    for line in output.splitlines():
        match = ROW.match(line)
        if match and match["name"] != "benchmark" and not line.startswith("-"):
            ratio = None if match["ratio"] == "–" else float(match["ratio"])
            rows[match["name"].strip()] = (match["ours"].strip(), ratio)
    return rows


def run_tree(tree: Path, name: str) -> str:
    """``python -m benchmarks NAME`` with ``tree``'s package and benchmark code."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", name],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    rev, names = argv[0], argv[1:] or list(HELD)
    root = Path(ROOT)
    with tempfile.TemporaryDirectory(prefix="held-") as scratch:
        before = Path(scratch) / "before"
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", "-q", str(before), rev],
            check=True,
        )
        try:
            print(f"before: {rev}; after: the working tree at {root}; load {load():.1f}")
            header = f"{'benchmark':58} {'before':>16} {'after':>16} {'after/before':>12}  own ratio before → after"
            print(header)
            print("-" * len(header))
            for name in names:
                print(f"running {name} ...", file=sys.stderr, flush=True)
                old, new = rows_of(run_tree(before, name)), rows_of(run_tree(root, name))
                for row in new.keys() | old.keys():
                    (was, was_ratio), (now, now_ratio) = (
                        old.get(row, ("–", None)),
                        new.get(row, ("–", None)),
                    )
                    a, b = figure(was), figure(now)
                    change = f"{b / a:.2f}" if a and b is not None else "–"
                    own = f"{was_ratio if was_ratio is not None else '–'} → {now_ratio if now_ratio is not None else '–'}"
                    print(f"{row[:58]:58} {was[:16]:>16} {now[:16]:>16} {change:>12}  {own}")
        finally:
            subprocess.run(
                ["git", "-C", str(root), "worktree", "remove", "--force", str(before)], check=False
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
