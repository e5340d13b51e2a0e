"""Accuracy of the serving model's speed estimates against its calibration.

    python benchmarks/inference_accuracy.py

For decode and prefill: the share of rows within 1.25x and 1.5x and the worst factor, in sample
(rules fitted on every row) and leaving one source out (each contributor's rows predicted by
rules fitted without them); decode asked as a user asks it (the row's GPU typed by name through
``--assume-gpu``, the shipped rules); then the memory cases: how often the plan agrees with the
run.
The engines people serve with (llama.cpp, vLLM, ...) and this project's eager reference runs
(transformers, random weights) are scored apart: the reference rows fit the host's time per
forward pass of one machine per device kind, so they are scored leaving one model size out.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.advise.serve.calib import (
    HOST_FAMILIES,
    accuracy,
    fit_rules,
    in_sample,
    leave_one_source_out,
    load_calibration,
    memory_cases,
    predict,
    predict_pace,
    predict_serving,
    reference_run,
    serving_estimate,
    serving_one_out,
    serving_rows,
    speed_rows,
)
from hwadvisor.advise.serve.memory import GiB


def main() -> None:
    data = load_calibration()
    rows = speed_rows(data)
    served = [r for r in rows if r.family not in HOST_FAMILIES and not reference_run(r)]
    ours = [r for r in rows if r.family not in HOST_FAMILIES and reference_run(r)]
    batched = serving_rows(data)
    eager = [r for r in rows if r.family in HOST_FAMILIES]
    print(f"{len(rows)} speed rows from {len({r.group for r in rows})} sources")
    print(f"served engines: {len(served)} rows from {len({r.group for r in served})} sources")
    loso = leave_one_source_out(served, ("decode", "prefill"), batched)
    for phase in ("decode", "prefill"):
        _line(phase, "in sample", in_sample(served, phase, batched))
        _line(phase, "leave one source out", loso[phase])
    _line("decode", "typed by name", _typed(data))
    _serving(rows, batched)
    print(f"eager reference runs: {len(eager)} rows from {len({r.group for r in eager})} machines")
    rules = fit_rules(rows)
    for phase in ("decode", "prefill"):
        _line(phase, "in sample", [r for row in eager if (r := predict(row, rules, phase))])
        _line(phase, "leave one size out", _one_out(rows, eager, phase))
    print(f"llama.cpp reference runs on this project's machine: {len(ours)} rows")
    for phase in ("decode", "prefill"):
        _line(phase, "in sample", [r for row in ours if (r := predict(row, rules, phase))])
        _line(phase, "leave one size out", _one_out(rows, ours, phase))
    _memory(data)


def _one_out(rows: list[Any], scored: list[Any], phase: str) -> list[float]:
    """Each scored row predicted by rules fitted on every other row (its machine's other
    sizes stay): the host's time per layer must carry to a model size it has not seen."""
    out = []
    for row in scored:
        rules = fit_rules([r for r in rows if r is not row])
        if (ratio := predict(row, rules, phase)) is not None:
            out.append(ratio)
    return out


def _serving(rows: list[Any], batched: list[Any]) -> None:
    """Batched serving (output tokens/s of a benchmark at a concurrency): as the model stood
    before these runs (decode alone, no time per sequence or all-reduce), in sample, and each
    source predicted with the batching times fitted without it."""
    groups = len({r.group for r in batched})
    print(f"batched serving: {len(batched)} runs from {groups} sources (output tokens/s)")
    base = fit_rules(rows)  # no batching times: a step as at batch 1
    before = []
    for run in batched:
        est = serving_estimate(run, base)
        before.append(run.output_tok_s / (est.users / est.step_s))
    _line("serving", "decode alone (before)", before)
    rules = fit_rules(rows, serving=batched)
    _line("serving", "in sample", [predict_serving(r, rules) for r in batched])
    _line("serving", "leave one source out", serving_one_out(rows, batched))
    # a user's pace (1 / TPOT): the step with the other users' prompts in between, and (as
    # before) the step alone
    paces = [p for r in batched if (p := predict_pace(r, rules)) is not None]
    _line("pace", "per user, 1 / TPOT", paces)
    alone = [(1.0 / r.tpot_s) * serving_estimate(r, rules).step_s for r in batched if r.tpot_s]
    _line("pace", "the step alone (before)", alone)


def _typed(data: dict[str, Any]) -> list[float]:
    """Each single-GPU or Apple row of a served engine asked as a user asks it: its GPU typed
    by the name the row gives (``--assume-gpu``), the model, quant, engine and context as the
    row has them; measured / the assumed GPU's decode (in sample: the shipped rules)."""
    from hwadvisor.advise.serving import ServeRequest, serve_advice
    from hwadvisor.catalog.peaks import find_gpu_peak
    from hwadvisor.errors import UsageError

    ratios = []
    for raw in data.get("speed", []):
        if raw["kind"] == "cpu" or not raw.get("decode_tok_s") or int(raw.get("count", 1)) != 1:
            continue
        if raw["engine"] in HOST_FAMILIES or raw["engine"] == "transformers":
            continue
        if find_gpu_peak(str(raw.get("hardware", "")), None, fallback=False) is None:
            continue
        request = ServeRequest(
            model=str(raw["model"]),
            quant=str(raw["quant"]),
            engine=str(raw["engine"]),
            context=int(raw.get("context", 512)),
            prompt_tokens=int(raw.get("prompt_tokens", 512)),
            assume_gpu=(str(raw["hardware"]),),
        )
        try:
            answer = serve_advice(None, request)
        except UsageError:  # an engine the CLI does not run there (SGLang on a Mac's GPU)
            continue
        assumed = [e for e in answer.estimates if e.origin == "assumed"]
        if assumed and assumed[0].decode_tok_s:
            ratios.append(float(raw["decode_tok_s"]) / assumed[0].decode_tok_s)
    return ratios


def _line(phase: str, label: str, ratios: list[float]) -> None:
    acc = accuracy(ratios)
    if acc.n == 0:
        print(f"{phase:8} {label:22} no rows")
        return
    print(
        f"{phase:8} {label:22} n={acc.n:3}  within 1.25x {acc.within_125:5.0%}  "
        f"within 1.5x {acc.within_150:5.0%}  worst {acc.worst:.2f}x"
    )


def _memory(data: Any) -> None:
    cases = memory_cases(data)
    misses = [c for c in cases if c.plan().fits != (c.outcome == "fit")]
    wrong_fit = sum(c.outcome == "oom" for c in misses)
    print(
        f"memory   {len(cases) - len(misses)}/{len(cases)} fit/out-of-memory cases agree; "
        f"'fits' where it ran out: {wrong_fit}"
    )
    for c in misses:
        print(
            f"         disagrees: {c.geom.name} {c.quant} {c.engine} context {c.context} on "
            f"{c.device.count} x {c.device.total_bytes / GiB:.1f} GiB, documented {c.outcome} "
            f"({c.source})"
        )


if __name__ == "__main__":
    main()
