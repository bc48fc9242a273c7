"""What every benchmark shares: interleaved timing, one result row, the table, the machine.

Figures are RATIOS of two things measured in the same run, alternating, keeping each one's best
time: on a noisy shared machine both sides see the same noise, so the ratio holds where absolute
seconds would not.
"""

from __future__ import annotations

import gc
import os
import platform
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the shared collections: $RETRIEVAL_EVAL_DATA as for the tests (relative to the repo root),
# else ../shared/data
SHARED_DATA = os.path.normpath(
    os.path.join(
        ROOT, os.environ.get("RETRIEVAL_EVAL_DATA") or os.path.join("..", "shared", "data")
    )
)


def compile_package() -> None:
    """Byte-compile the project's code, as installing its wheel does (``make bench`` does too).

    With PYTHONDONTWRITEBYTECODE=1 an editable checkout is compiled from source in every
    subprocess, a cost no installed deployment pays.
    """
    import compileall

    for folder in ("retrieval_eval", "dags", "plugins", "benchmarks"):
        compileall.compile_dir(os.path.join(ROOT, folder), quiet=1, workers=0)


def load() -> float:
    """The one-minute load average (0 where the platform has none): printed beside each figure."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


@dataclass
class Row:
    """One line of the table. ``met`` is None where there is no target (information only).

    ``load`` is the load average when the row's figure was taken: on a shared machine, it says
    how much the figure can be trusted.
    """

    benchmark: str
    ours: str
    reference: str
    ratio: float | None
    target: str
    met: bool | None
    note: str = ""
    load: float = field(default_factory=load)

    @property
    def verdict(self) -> str:
        if self.met is None:
            return "info" if self.ratio is not None else "skipped"
        return "met" if self.met else "MISSED"


def best_times(
    candidates: dict[str, Callable[[], object]], repeat: int, budget_s: float
) -> dict[str, float]:
    """Each candidate's best wall time over ``repeat`` alternating rounds (fewer past the budget).

    Every candidate runs at least once; rounds stop early when ``budget_s`` is spent. A full
    collection before each call keeps one side from paying the other's garbage-collector debt.
    """
    best = {name: float("inf") for name in candidates}
    started = time.perf_counter()
    for _ in range(repeat):
        for name, function in candidates.items():
            gc.collect()
            t0 = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - t0)
        if time.perf_counter() - started > budget_s:
            break
    return best


def seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def machine() -> str:
    """A one-line description of where the figures come from."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if "model name" in line]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, load {load():.1f}"
    )


def render(rows: list[Row]) -> str:
    """The one table ``make bench`` prints (plain text, aligned), with the notes below it."""
    header = ["benchmark", "ours", "reference", "ratio", "target", "result", "load"]
    lines = [
        [
            row.benchmark,
            row.ours,
            row.reference,
            "–" if row.ratio is None else f"{row.ratio:.2f}",
            row.target,
            row.verdict,
            f"{row.load:.1f}",
        ]
        for row in rows
    ]
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *lines, strict=True)]
    out = [
        "  ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)).rstrip(),
        "  ".join("-" * width for width in widths),
    ]
    out += [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    ]
    notes = [f"[{i}] {row.benchmark}: {row.note}" for i, row in enumerate(rows, 1) if row.note]
    return "\n".join(out + (["", *notes] if notes else []))


def pg_schema(url: str) -> tuple[str, str]:
    """A fresh PostgreSQL schema for the benchmark's store (dropped afterwards)."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    sep = "&" if "?" in url else "?"
    return name, f"{url}{sep}options=-csearch_path%3D{name}"


def drop_pg_schema(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")


def proc_status(field: str) -> int:
    """A /proc/self/status figure in bytes (``VmRSS`` now, ``VmHWM`` its peak); 0 elsewhere."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
