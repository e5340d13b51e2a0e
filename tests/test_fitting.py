"""Fitting the time model's rules (hwadvisor.fitting): the fit recovers rules that generated the
data, the leave-one-origin-out evaluation never lets an origin's rows into its own fit, and the
ranges come from the out-of-sample errors."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from hwadvisor import fitting
from hwadvisor.advise import load_rules
from hwadvisor.calibration import Comparison, compare, load_calibration
from hwadvisor.catalog.model import ModelParams, band_for, bands, model_params, using

RULES = load_rules()
ROWS = load_calibration()


def _generated(truth: ModelParams, ids: list[str]) -> list:
    """Rows whose measured figure is what ``truth`` predicts: a perfect fit exists."""
    out = []
    for row in (r for r in ROWS if r.id in ids):
        with using(truth):
            predicted = compare(row, RULES).predicted
        out.append(replace(row, measured=predicted))
    return out


def test_the_fit_recovers_rules_that_generated_the_data() -> None:
    ids = [
        r.id
        for r in ROWS
        if not r.is_cpu and r.gpus == 1 and r.origin in ("nvidia-dle", "lambda", "timm")
    ][:24]
    # Little memory traffic, so that the arithmetic binds every row and both rules show.
    start = replace(ModelParams(), traffic_per_activation_byte=2.0)
    truth = replace(start, tensor_conv=0.35, tensor_transformer=0.62)
    rows = _generated(truth, ids)
    before = fitting.loss(start, rows, RULES)
    found = fitting.fit(
        rows, RULES, start=start, names=["tensor_conv", "tensor_transformer"], rounds=4
    )
    assert found.loss < before / 20
    assert found.params.tensor_conv == pytest.approx(0.35, rel=0.1)
    assert found.params.tensor_transformer == pytest.approx(0.62, rel=0.15)


def test_leaving_an_origin_out_never_fits_on_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[set[str], str]] = []
    rows = [r for r in ROWS if r.origin in ("karpathy", "paddle", "deepspeed")]

    def spy(train, rules=None, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(({r.origin for r in train}, ""))
        return fitting.Fit(ModelParams(), 0.0, 0)

    monkeypatch.setattr(fitting, "fit", spy)
    held = fitting.leave_one_origin_out(rows, RULES)
    assert [h.origin for h in held] == ["deepspeed", "karpathy", "paddle"]
    for h, (train_origins, _) in zip(held, seen, strict=True):
        assert h.origin not in train_origins
        assert train_origins == {"deepspeed", "karpathy", "paddle"} - {h.origin}
        assert {c.row.origin for c in h.comparisons} == {h.origin}
        assert len(h.comparisons) == sum(1 for r in rows if r.origin == h.origin)


def _comparison(ratio: float, kind: str = "conv", device: str = "datacenter-gpu") -> Comparison:
    return Comparison(
        row=ROWS[0], predicted=1.0, ratio=ratio, kind=kind, device_class=device, parameters=10**9
    )


def test_the_bands_are_the_out_of_sample_percentiles_never_too_narrow() -> None:
    ratios = [0.5, 0.6, 0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.6, 2.2]
    found = fitting.bands([_comparison(r) for r in ratios])
    low, high, rows = found["conv/datacenter-gpu"]
    assert rows == 10
    assert low == pytest.approx(0.59, abs=0.01) and high == pytest.approx(1.66, abs=0.01)
    # A tight group is widened to the narrowest range ever shown.
    tight = fitting.bands([_comparison(1.0 + 0.01 * i) for i in range(10)])
    assert tight["conv/datacenter-gpu"][:2] == fitting.MIN_BAND
    # CPUs get at least the wide range; a small group takes the whole table's.
    mixed = [_comparison(r) for r in ratios] + [_comparison(1.0, device="cpu")]
    cpu_low, cpu_high, _ = fitting.bands(mixed)["conv/cpu"]
    assert cpu_low <= fitting.WIDE_BAND[0] and cpu_high >= fitting.WIDE_BAND[1]


def test_the_packaged_bands_cover_most_of_the_held_out_errors() -> None:
    """The ranges in force: each group's shown range holds the 10th-90th percentile (so about
    eight in ten out-of-sample errors), and a small transformer's is never narrower than its
    kind's."""
    packaged = bands()
    assert "all" in packaged and packaged["all"].rows == len(ROWS)
    for device in ("consumer-gpu", "datacenter-gpu"):
        small = band_for("transformer", device, 1.2e8)
        big = band_for("transformer", device, 7e9)
        assert small[0] <= big[0] and small[1] >= big[1]
    cpu = band_for("conv", "cpu")
    assert cpu[0] <= 0.5 and cpu[1] >= 2.0


def test_the_packaged_rules_are_within_their_search_space() -> None:
    p = model_params()
    for name, (_kind, low, high) in fitting.SPACE.items():
        value = getattr(p, name)
        assert math.isfinite(value) and low <= value <= high, name
