"""Inspect AI's own reader on `cfeval export inspect`'s logs.

Usage: check_inspect.py LOG_DIR EXPECTED_JSON REWRITE_DIR

EXPECTED_JSON maps each log's file name to what cfeval's tables say:
{"samples": n, "model": subject, "scorers": {name: numeric verdicts},
 "metrics": {scorer: {metric: value}}}. The script checks that
`inspect_ai.log.list_eval_logs` finds every log, that `read_eval_log` loads
each one (header and samples, validated by Inspect's own models), that the
per-scorer counts of numeric scores on the samples and `scored_samples`
match, and that the metric values match. Then it writes every log again
with Inspect's own writer, as `.eval` and as `.json`, into REWRITE_DIR (for
the importer to read files made by Inspect, not by cfeval), plus a
`damaged.eval`: a copy of the first log with one sample's id changed to a
variant the run does not have and one sample entry that is not JSON.
Prints one `agree <file>` line per log.
"""

import json
import math
import os
import shutil
import sys
import zipfile

from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log


def main() -> int:
    log_dir, expected_path, rewrite_dir = sys.argv[1:4]
    with open(expected_path) as f:
        expected = json.load(f)
    found = {os.path.basename(info.name) for info in list_eval_logs(log_dir)}
    missing = set(expected) - found
    if missing:
        print(f"list_eval_logs did not find {sorted(missing)} (found {sorted(found)})")
        return 1
    os.makedirs(rewrite_dir, exist_ok=True)
    problems = []
    for name, want in sorted(expected.items()):
        log = read_eval_log(os.path.join(log_dir, name))
        if log.status != "success":
            problems.append(f"{name}: status {log.status}")
        if log.eval.model != want["model"]:
            problems.append(f"{name}: model {log.eval.model} != {want['model']}")
        samples = log.samples or []
        if len(samples) != want["samples"]:
            problems.append(f"{name}: {len(samples)} samples != {want['samples']}")
        counts = {}
        for sample in samples:
            if not sample.messages or sample.messages[-1].role != "assistant":
                problems.append(f"{name}: sample {sample.id} does not end with the answer")
            for scorer, score in (sample.scores or {}).items():
                if isinstance(score.value, (int, float)) and not isinstance(score.value, bool):
                    counts[scorer] = counts.get(scorer, 0) + 1
        if name.endswith("_agent.eval"):
            tool_turns = sum(
                1 for sample in samples for message in sample.messages if message.role == "tool"
            )
            if not tool_turns:
                problems.append(f"{name}: an agent log without a tool message")
        if counts != want["scorers"]:
            problems.append(f"{name}: numeric scores per scorer {counts} != {want['scorers']}")
        results = {score.name: score for score in (log.results.scores if log.results else [])}
        for scorer, count in want["scorers"].items():
            if scorer not in results:
                problems.append(f"{name}: no results entry for {scorer}")
            elif results[scorer].scored_samples != count:
                problems.append(
                    f"{name}: {scorer} scored_samples {results[scorer].scored_samples} != {count}"
                )
        for scorer, metrics in want["metrics"].items():
            for metric, value in metrics.items():
                got = results.get(scorer) and results[scorer].metrics.get(metric)
                if not got or not math.isclose(got.value, value, rel_tol=0, abs_tol=1e-12):
                    problems.append(f"{name}: {scorer} {metric} = {got and got.value} != {value}")
        stem = os.path.splitext(name)[0]
        write_eval_log(log, os.path.join(rewrite_dir, f"{stem}.rewritten.eval"), format="eval")
        write_eval_log(log, os.path.join(rewrite_dir, f"{stem}.rewritten.json"), format="json")
        if not problems:
            print(f"agree {name}")
    first = sorted(expected)[0]
    damaged = os.path.join(rewrite_dir, "damaged.eval")
    shutil.copy(os.path.join(log_dir, first), damaged)
    log = read_eval_log(damaged)
    assert log.samples
    log.samples[0].id = "no-such-variant"
    log.samples[0].metadata = {}
    write_eval_log(log, damaged, format="eval")
    with zipfile.ZipFile(damaged, "a") as archive:
        archive.writestr("samples/zz-broken_epoch_1.json", "{not json")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
