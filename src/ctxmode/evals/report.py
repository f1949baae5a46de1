"""The eval report: medians per arm, paired differences, spread between runs, pass rates.

For a metric of one task:
- ``with`` / ``without``: the median over that arm's runs;
- ``diff``: the median of the paired differences (with minus without, same run number), over
  the runs where both arms finished; negative = ctxmode used less;
- ``spread``: the larger of the two arms' ranges (max - min over its runs), i.e. how far two
  runs of the *same* arm fell apart. A difference no larger than that cannot be told from
  run-to-run noise.

Overall: the same over every run of every task, with ``spread`` the largest per-task spread
(tasks differ in size, so pooled ranges would measure the tasks, not the noise).
"""

from __future__ import annotations

from statistics import median
from typing import Any

from ctxmode.evals.runner import ARMS, EvalResult, RunResult

__all__ = ["METRICS", "build_report", "verdict"]

#: Reported figures: key in a run record -> label. ``tokens`` is input + output + cache.
METRICS: dict[str, str] = {
    "turns": "turns",
    "tool_calls": "tool calls",
    "tool_calls_before_edit": "tool calls before 1st edit",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "cache_creation_tokens": "cache write tokens",
    "cache_read_tokens": "cache read tokens",
    "tokens": "tokens (all)",
    "cost_usd": "cost USD",
    "wall_s": "wall s",
    "injected_bytes": "bytes injected",
}
#: The figures the plain sentence speaks about.
HEADLINE = ("tokens", "cost_usd", "tool_calls", "wall_s")


def _value(run: RunResult, key: str) -> float | None:
    a = run.agent
    if key == "tokens":
        parts = (a.input_tokens, a.output_tokens, a.cache_creation_tokens, a.cache_read_tokens)
        return float(sum(p or 0 for p in parts)) if a.input_tokens is not None else None
    value = getattr(a, key)
    return float(value) if isinstance(value, int | float) else None


def _round(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(value, 4)


def _median(values: list[float]) -> float | None:
    return median(values) if values else None


def _finished(run: RunResult) -> bool:
    return run.agent.turns is not None


def _metric(runs: list[RunResult], key: str) -> dict[str, Any]:
    per_arm: dict[str, list[float]] = {arm: [] for arm in ARMS}
    by_pair: dict[tuple[str, int], dict[str, float]] = {}
    for r in runs:
        value = _value(r, key)
        if value is None or not _finished(r):
            continue
        per_arm[r.arm].append(value)
        by_pair.setdefault((r.task, r.run), {})[r.arm] = value
    diffs = [p["with"] - p["without"] for p in by_pair.values() if len(p) == 2]
    ranges = [max(v) - min(v) for v in per_arm.values() if len(v) > 1]
    return {
        "with": _round(_median(per_arm["with"])),
        "without": _round(_median(per_arm["without"])),
        "diff": _round(_median(diffs)),
        "pairs": len(diffs),
        "spread": _round(max(ranges)) if ranges else None,
    }


def _pass_rates(runs: list[RunResult]) -> dict[str, dict[str, Any]]:
    out = {}
    for arm in ARMS:
        mine = [r for r in runs if r.arm == arm]
        passed = sum(r.passed for r in mine)
        out[arm] = {
            "passed": passed,
            "runs": len(mine),
            "rate": round(passed / len(mine), 4) if mine else None,
        }
    return out


def verdict(metrics: dict[str, dict[str, Any]], runs_per_arm: int) -> str:
    """One plain sentence (or a few) on whether the differences exceed the noise."""
    if runs_per_arm < 2:
        return (
            "One run per arm: there is no spread between runs to compare the difference "
            "with; run with --runs 3 or more before drawing a conclusion."
        )
    said = []
    for key in HEADLINE:
        m = metrics[key]
        if m["diff"] is None or m["spread"] is None:
            continue
        label = METRICS[key]
        direction = "fewer" if m["diff"] < 0 else "more"
        size = abs(m["diff"])
        if m["diff"] == 0:
            said.append(f"{label}: no difference")
        elif size > m["spread"]:
            said.append(
                f"{label}: {size:.4g} {direction} with ctxmode, larger than the spread between "
                f"runs of the same arm ({m['spread']:.4g})"
            )
        else:
            said.append(
                f"{label}: {size:.4g} {direction} with ctxmode, within the spread between runs "
                f"of the same arm ({m['spread']:.4g}), so not distinguishable from noise"
            )
    if not said:
        return "Not enough finished runs in both arms to compare."
    return "; ".join(said) + "."


def _section(runs: list[RunResult], runs_per_arm: int, spread_of: Any = None) -> dict[str, Any]:
    metrics = {key: _metric(runs, key) for key in METRICS}
    if spread_of is not None:
        for key in METRICS:
            spreads = [s["metrics"][key]["spread"] for s in spread_of]
            known = [s for s in spreads if s is not None]
            metrics[key]["spread"] = max(known) if known else None
    return {
        "pass_rate": _pass_rates(runs),
        "metrics": metrics,
        "errors": [f"{r.task} run {r.run} {r.arm}: {r.error}" for r in runs if r.error],
        "verdict": verdict(metrics, runs_per_arm),
    }


def build_report(result: EvalResult) -> dict[str, Any]:
    """The whole report as one JSON-ready document (the ``--json`` output)."""
    tasks = []
    for task in result.tasks:
        mine = [r for r in result.results if r.task == task.name]
        if not mine:
            continue
        section = _section(mine, min(sum(r.arm == arm for r in mine) for arm in ARMS))
        tasks.append({"task": task.name, **section})
    per_arm = min((t["pass_rate"][arm]["runs"] for t in tasks for arm in ARMS), default=0)
    return {
        "agent": result.agent,
        "agent_version": result.agent_version,
        "runs_per_task": result.runs,
        "interrupted": result.interrupted,
        "warnings": result.warnings,
        "out_dir": str(result.out_dir),
        "scratch_dir": str(result.scratch_dir),
        "injected_bytes_source": (
            "the additionalContext of the agent's hook_response lines holding a "
            "<ctxmode_data> fence (the store records consumed resume snapshots only)"
            if result.agent == "claude-code"
            else f"not counted: {result.agent}'s stream shows no hook output (see the store's "
            "snapshots_injected)"
        ),
        "tasks": tasks,
        "overall": _section(result.results, per_arm, spread_of=tasks),
        "runs": [r.to_dict() for r in result.results],
    }
