#!/usr/bin/env python3
"""Print the pairs of retrieval_eval's top-level folders that import each other.

Counts every import grimp sees (module level, inside functions, under TYPE_CHECKING), as the
import-linter contract in .importlinter does: a pair printed here is a cycle between two layers.
With ``--why`` each pair is followed by the imports that make each direction.

    .venv/bin/python tools/folder_cycles.py          # one pair a line, then the count
    .venv/bin/python tools/folder_cycles.py --why    # and the module imports behind each pair
"""

from __future__ import annotations

import argparse
import itertools
import sys

import grimp

PACKAGE = "retrieval_eval"


def folders(graph: grimp.ImportGraph, package: str) -> list[str]:
    """The package's top-level subpackages (its folders; root modules are not layers)."""
    return sorted(name for name in graph.find_children(package) if graph.find_children(name))


def imports_between(graph: grimp.ImportGraph, importer: str, imported: str) -> list[str]:
    """``importer.x -> imported.y`` lines, one per direct import from one folder into the other."""
    found = graph.find_matching_direct_imports(
        import_expression=f"{importer}.** -> {imported}.**"
    ) + graph.find_matching_direct_imports(import_expression=f"{importer} -> {imported}.**")
    return sorted({f"{i['importer']} -> {i['imported']}" for i in found})


def cycles(graph: grimp.ImportGraph, package: str = PACKAGE) -> list[tuple[str, str]]:
    """Every pair of folders (a, b) where a imports b and b imports a, directly."""
    names = folders(graph, package)
    return [
        (a, b)
        for a, b in itertools.combinations(names, 2)
        if graph.direct_import_exists(importer=a, imported=b, as_packages=True)
        and graph.direct_import_exists(importer=b, imported=a, as_packages=True)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--why", action="store_true", help="list the imports behind each pair")
    args = parser.parse_args(argv)
    graph = grimp.build_graph(PACKAGE, cache_dir=None)
    pairs = cycles(graph)
    short = len(PACKAGE) + 1
    for a, b in pairs:
        print(f"{a[short:]} <-> {b[short:]}")
        if args.why:
            for line in imports_between(graph, a, b) + imports_between(graph, b, a):
                print(f"    {line}")
    print(f"{len(pairs)} pairs of folders import each other")
    return 0


if __name__ == "__main__":
    sys.exit(main())
