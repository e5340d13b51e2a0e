"""The checks of the GPU validation (scripts/gpu_validate.py), with hwadvisor's own readers.

    python scripts/gpu_checks.py facts  --scan scan.json [--xml nvidia-smi.xml] [--exit N]
    python scripts/gpu_checks.py busy   --scan busy.json
    python scripts/gpu_checks.py report --scan scan.json [--html F] [--pdf F] [--exit N]

Each prints a JSON list of checks: ``{"name", "status", "figure"}``, status one of pass, FAIL,
skip, info. Pure functions over a profile and files, so the tests run them on fixtures.
"""

from __future__ import annotations

import argparse
import html as htmllib
import json
import sys
from pathlib import Path
from typing import Any

from hwadvisor.importers.base import ImportFormatError
from hwadvisor.importers.nvidia_smi_xml import COMPARABLE_FIELDS, parse_nvidia_smi_xml
from hwadvisor.model.bench import BenchStatus, Disturbance, Measurement
from hwadvisor.model.facts import Fact
from hwadvisor.model.load import load_profile
from hwadvisor.model.profile import GpuInfo, Profile

PASS, FAIL, SKIP, INFO = "pass", "FAIL", "skip", "info"

#: A figure above its peak by more than this is a timing error (an unsynchronised kernel).
OVER_PEAK = 1.05
#: Large matmuls reach 60–90 % of the dense peak on datacenter GPUs; under this, something is off
#: (a wrong peak, a precision setting not in force, a throttled or shared GPU).
MATMUL_FLOOR = 0.45


def check(name: str, ok: bool | None, figure: str) -> dict[str, str]:
    status = SKIP if ok is None else (PASS if ok else FAIL)
    return {"name": name, "status": status, "figure": figure}


def info(name: str, figure: str) -> dict[str, str]:
    return {"name": name, "status": INFO, "figure": figure}


def _value(f: Any) -> Any:
    return f.value if isinstance(f, Fact) else f


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) or isinstance(got, float):
        return got is not None and abs(float(got) - float(want)) <= 0.5
    if isinstance(want, str) and isinstance(got, str):
        return got.strip().lower() == want.strip().lower()
    return bool(got == want)


def compare_gpu(probe: GpuInfo, smi: GpuInfo) -> tuple[int, list[str]]:
    """Fields compared, and the ones that differ (``field: probe … vs nvidia-smi …``)."""
    compared, differ = 0, []
    for name in COMPARABLE_FIELDS:
        want = _value(getattr(smi, name, None))
        if want is None:
            continue  # nvidia-smi could not show it: nothing to compare
        got = _value(getattr(probe, name, None))
        compared += 1
        if not _same(got, want):
            differ.append(f"{name}: probe {got!r} vs nvidia-smi {want!r}")
    return compared, differ


def _cuda(profile: Profile) -> list[Measurement]:
    bench = profile.benchmarks
    return [m for m in (bench.measurements if bench else []) if m.device.startswith("cuda")]


def _figure(m: Measurement) -> str:
    name = " ".join(p for p in (m.case, m.precision, m.variant) if p)
    if m.best is None:
        return f"{name}: {m.status.value}"
    best = m.best / 1000 if m.unit == "GFLOP/s" else m.best
    unit = "TFLOP/s" if m.unit == "GFLOP/s" else m.unit
    text = f"{name} {best:,.1f} {unit}"
    if m.efficiency is not None:
        text += f" ({m.efficiency:.0%} of peak)"
    return text


def _this_machine_basis(profile: Profile) -> str:
    advice = profile.advice
    if advice is None:
        return ""
    return " ".join(e.basis or "" for e in advice.estimates if e.origin == "this-machine")


def facts_checks(
    profile: Profile, xml_text: str | None, exit_code: int = 0
) -> list[dict[str, str]]:
    """The GPU scan against nvidia-smi and against what its figures can be."""
    out: list[dict[str, str]] = []
    gpus = [g for g in profile.gpus if g.vendor == "nvidia"]
    bench = profile.benchmarks
    out.append(
        check(
            "scan finished",
            exit_code in (0, 3) and bench is not None,
            f"exit {exit_code}; {len(profile.gpus)} GPU(s); benchmarks "
            f"{bench.status.value if bench else 'missing'}"
            + (f" in {bench.duration_seconds:.0f} s" if bench and bench.duration_seconds else ""),
        )
    )
    if xml_text is None:
        out.append(
            check(
                "no NVIDIA GPU reported",
                not gpus,
                "the probe found none, as nvidia-smi"
                if not gpus
                else f"the probe found {len(gpus)} NVIDIA GPU(s) that nvidia-smi did not",
            )
        )
        return out
    try:
        nvml, smi_gpus = parse_nvidia_smi_xml(xml_text)
    except ImportFormatError as exc:
        out.append(check("nvidia-smi -q -x readable", False, str(exc)[:160]))
        out += _figure_checks(_cuda(profile))
        return out
    out.append(
        check(
            "GPU count",
            len(gpus) == len(smi_gpus),
            f"probe {len(gpus)}, nvidia-smi {len(smi_gpus)}",
        )
    )
    for field in ("driver_version", "cuda_driver_version"):
        want, got = _value(getattr(nvml, field)), _value(getattr(profile.nvml, field))
        out.append(check(field.replace("_", " "), got == want, f"probe {got}, nvidia-smi {want}"))
    by_uuid = {_value(g.uuid): g for g in gpus}
    for i, smi in enumerate(smi_gpus):
        probe = by_uuid.get(_value(smi.uuid)) or (gpus[i] if i < len(gpus) else None)
        label = f"GPU {i} vs nvidia-smi"
        if probe is None:
            out.append(check(label, False, f"{_value(smi.name)} not found by the probe"))
            continue
        compared, differ = compare_gpu(probe, smi)
        figure = f"{compared - len(differ)}/{compared} fields agree" + (
            ": " + "; ".join(differ) if differ else f" ({_value(smi.name)})"
        )
        out.append(check(label, not differ, figure))
    torch = profile.frameworks.torch
    seen = _value(torch.device_count)
    out.append(
        check(
            "torch sees the GPUs",
            bool(_value(torch.cuda_available)) and seen == len(smi_gpus),
            f"torch {_value(torch.version)}, CUDA {_value(torch.cuda_runtime_version)}, "
            f"available {_value(torch.cuda_available)}, {seen} device(s)",
        )
    )
    out += _figure_checks(_cuda(profile))
    basis = _this_machine_basis(profile)
    out.append(
        check(
            "advice uses the measured figures",
            "set aside" not in basis and "measured" in basis,
            basis[:160] or "no estimate for this machine",
        )
    )
    return out


def _figure_checks(ms: list[Measurement]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if not ms:
        return [check("GPU benchmarks ran", False, "no GPU measurement in the profile")]
    bad = [
        m
        for m in ms
        if m.status != BenchStatus.OK
        and not (m.precision == "fp8" and m.status == BenchStatus.SKIPPED)
    ]
    out.append(
        check(
            "GPU benchmark cases ok",
            not bad,
            f"{len(ms) - len(bad)}/{len(ms)} ok"
            + ("; " + "; ".join(f"{_figure(m)}: {m.message}" for m in bad[:3]) if bad else ""),
        )
    )
    over = [m for m in ms if m.efficiency is not None and m.efficiency > OVER_PEAK]
    out.append(
        check(
            "no figure above its peak",
            not over,
            "; ".join(_figure(m) for m in over)
            or f"{sum(m.efficiency is not None for m in ms)} "
            "figures with a peak, all at or under it",
        )
    )
    for m in ms:
        if m.case == "matmul" and m.precision in ("bf16", "fp16") and m.efficiency is not None:
            out.append(
                check(
                    f"{m.precision} matmul near its peak",
                    m.efficiency >= MATMUL_FLOOR,
                    _figure(m) + f" (floor {MATMUL_FLOOR:.0%})",
                )
            )
    idle = [m for m in ms if m.disturbances]
    out.append(
        check(
            "idle GPU not flagged busy",
            not idle,
            "; ".join(f"{_figure(m)}: {m.disturbance_note}" for m in idle[:2])
            or "no figure carries a disturbance",
        )
    )
    key = {(m.case, m.precision, m.variant): m.best for m in ms if m.best}
    bf16, fp32 = key.get(("matmul", "bf16", None)), key.get(("matmul", "fp32", None))
    if bf16 and fp32:
        out.append(check("bf16 matmul faster than fp32", bf16 > fp32, f"{bf16 / fp32:.1f}×"))
    pinned, pageable = key.get(("h2d", None, "pinned")), key.get(("h2d", None, "pageable"))
    if pinned and pageable:
        out.append(
            check(
                "pinned H2D at least pageable",
                pinned >= 0.95 * pageable,
                f"pinned {pinned:,.1f} GB/s, pageable {pageable:,.1f} GB/s",
            )
        )
    return out


def busy_checks(profile: Profile) -> list[dict[str, str]]:
    """A scan beside a GPU busy loop: every GPU figure flagged, the advice sets them aside."""
    ms = [m for m in _cuda(profile) if m.status == BenchStatus.OK and m.best is not None]
    if not ms:
        return [check("GPU figures flagged gpu_busy", False, "no GPU figure was measured")]
    flagged = [m for m in ms if Disturbance.GPU_BUSY in m.disturbances]
    missed = [m for m in ms if m not in flagged]
    out = [
        check(
            "GPU figures flagged gpu_busy",
            not missed,
            f"{len(flagged)}/{len(ms)} flagged"
            + (": missed " + ", ".join(_figure(m) for m in missed[:4]) if missed else "")
            + (
                f"; {flagged[0].disturbance_note}"
                if flagged and flagged[0].disturbance_note
                else ""
            ),
        )
    ]
    basis = _this_machine_basis(profile)
    out.append(
        check(
            "advice sets them aside",
            "set aside" in basis,
            basis[:160] or "no estimate for this machine",
        )
    )
    return out


def report_checks(
    profile: Profile,
    html: Path | None,
    pdf: Path | None,
    exit_code: int = 0,
    no_pdf_reason: str | None = None,
) -> list[dict[str, str]]:
    names = sorted({str(_value(g.name)) for g in profile.gpus if _value(g.name)})
    out = [check("report command", exit_code in (0, 3), f"exit {exit_code}")]
    if html is None:
        out.append(check("HTML report", False, "no HTML written"))
    else:
        text = html.read_text(encoding="utf-8", errors="replace")
        missing = [n for n in names if htmllib.escape(n) not in text and n not in text]
        out.append(
            check(
                "HTML report",
                not missing and "Traceback" not in text,
                f"{html.stat().st_size / 1024:,.0f} KiB"
                + (f", names {', '.join(names)}" if names else "")
                + (f"; missing {', '.join(missing)}" if missing else ""),
            )
        )
    if pdf is not None:
        ok = pdf.read_bytes()[:5] == b"%PDF-"
        out.append(check("PDF report", ok, f"{pdf.stat().st_size / 1024:,.0f} KiB"))
    else:
        out.append(check("PDF report", None, no_pdf_reason or "no PDF written"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("what", choices=("facts", "busy", "report"))
    parser.add_argument("--scan", type=Path, required=True)
    parser.add_argument("--xml", type=Path)
    parser.add_argument("--html", type=Path)
    parser.add_argument("--pdf", type=Path)
    parser.add_argument("--exit", type=int, default=0)
    parser.add_argument("--no-pdf-reason")
    args = parser.parse_args(argv)
    profile = load_profile(args.scan)
    if args.what == "facts":
        xml = args.xml.read_text(encoding="utf-8", errors="replace") if args.xml else None
        found = facts_checks(profile, xml, args.exit)
    elif args.what == "busy":
        found = busy_checks(profile)
    else:
        found = report_checks(profile, args.html, args.pdf, args.exit, args.no_pdf_reason)
    json.dump(found, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
