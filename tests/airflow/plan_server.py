"""A long-lived ``dag.test()`` process for the tests: one plan per stdin line, one answer per line.

Request: ``{"env": {...}, "plan": [...], "log": PATH}``: the process environment becomes ``env``
exactly (nothing of an earlier module's plan carries over), then ``testrun.run_plan(plan)`` runs
with Airflow's output in PATH. Answer: ``{"outcomes": [...]}`` or ``{"error": traceback}``.
Airflow's imports and its execution API's first start are paid once per test worker instead of
once per module (``dag_helpers.run_plan`` starts it and says when a fresh process is needed).
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main() -> None:
    from retrieval_eval.airflow import testrun

    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")  # fd 1 goes to each plan's log
    for line in sys.stdin:
        request = json.loads(line)
        os.environ.clear()
        os.environ.update(request["env"])
        answer: dict[str, object]
        with testrun._output_to(request["log"]):
            try:
                answer = {"outcomes": testrun.run_plan(request["plan"])}
            except Exception:
                answer = {"error": traceback.format_exc()}
                print(answer["error"], file=sys.stderr)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
