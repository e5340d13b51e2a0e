"""The price catalog and the costs of one option: every row sourced and dated, every rung of the
ladder priced, cloud instances for each class from at least five providers, and the arithmetic
of a run's cost, its energy and the break-even."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.advise import builtin_prices, load_rules, scenario_class
from hwadvisor.advise.pricing import option_costs, price_age_days, stale_note
from hwadvisor.catalog.peaks import find_gpu_peak, load_catalog

CATALOG = {p.name for p in load_catalog()}


def test_every_row_names_its_source_and_date() -> None:
    prices = builtin_prices()
    rows = [*prices.cards.values(), *prices.systems, *prices.hosts, *prices.instances]
    assert len(rows) > 50
    for row in rows:
        assert row.source.strip() and row.date.strip(), row.key
        assert price_age_days(row.date, datetime.date(2026, 11, 27)) is not None, row.date
        assert row.price > 0
    assert prices.kwh_price > 0 and prices.kwh_source and prices.kwh_date


def test_cards_and_instances_name_catalog_gpus() -> None:
    prices = builtin_prices()
    assert set(prices.cards) <= CATALOG
    assert {i.gpu for i in prices.instances if i.gpu} <= CATALOG


def test_every_rung_of_the_ladder_can_be_bought_or_rented() -> None:
    prices = builtin_prices()
    for c in load_rules().candidates:
        peak = find_gpu_peak(c.gpu) if c.gpu else None
        costs = option_costs(
            prices,
            gpu=peak.name if peak else None,
            gpus=c.gpus,
            cores=c.cores,
            seconds=3600,
        )
        assert costs.purchase is not None, c.title
        assert costs.date, c.title
        assert costs.hourly is not None and costs.rent_as, c.title


def test_cloud_instances_cover_every_class_from_five_providers() -> None:
    prices = builtin_prices()
    providers = {i.provider for i in prices.instances}
    assert {"AWS", "Google Cloud", "Azure"} <= providers and len(providers) >= 5
    classes = {scenario_class(i.gpus) for i in prices.instances}
    assert classes == {1, 2, 3}


def test_the_costs_of_one_run() -> None:
    prices = builtin_prices().with_kwh(0.20)
    c = option_costs(prices, gpu="H100 SXM", gpus=8, seconds=10 * 3600)
    assert c.purchase is not None and c.hourly is not None and c.watts is not None
    assert c.run == pytest.approx(10 * c.hourly)
    assert c.energy == pytest.approx(c.watts / 1000 * 10 * 0.20)
    assert c.break_even_hours == pytest.approx(c.purchase / (c.hourly - c.watts / 1000 * 0.20))
    assert c.break_even_runs == pytest.approx(c.break_even_hours / 10)
    assert c.rent_as and "8" in c.rent_as
    two = option_costs(prices, gpu="H100 SXM", gpus=8, nodes=2, seconds=10 * 3600)
    assert two.purchase == pytest.approx(2 * c.purchase)
    assert two.hourly == pytest.approx(2 * c.hourly)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["GeForce RTX 4090", "H100 PCIe", "L4", "RTX 6000 Ada Generation", "T4"]),
    st.integers(min_value=1, max_value=8),
    st.floats(min_value=1.0, max_value=1e7),
)
def test_costs_grow_with_time_and_never_go_negative(gpu: str, gpus: int, seconds: float) -> None:
    prices = builtin_prices()
    short = option_costs(prices, gpu=gpu, gpus=gpus, seconds=seconds)
    long = option_costs(prices, gpu=gpu, gpus=gpus, seconds=seconds * 2)
    for a, b in ((short.run, long.run), (short.energy, long.energy)):
        if a is not None:
            assert b is not None and 0 <= a <= b
    assert short.purchase == long.purchase and short.hourly == long.hourly
    if short.break_even_hours is not None:
        assert short.break_even_hours > 0


def test_a_gpu_no_cloud_rents_is_rented_as_one_as_fast_and_as_large() -> None:
    c = option_costs(builtin_prices(), gpu="RTX 6000 Ada Generation", gpus=4, seconds=3600)
    assert c.rent_as is not None and "as fast: no cloud rents the" in c.rent_as
    rented = next(
        i for i in builtin_prices().instances if c.rent_as.startswith(f"{i.provider} {i.key}")
    )
    peak, want = find_gpu_peak(rented.gpu or ""), find_gpu_peak("RTX 6000 Ada Generation")
    assert peak is not None and want is not None and rented.gpus == 4
    assert (peak.memory_gb or 0) >= (want.memory_gb or 0)


def test_prices_over_a_year_old_are_named() -> None:
    today = datetime.date(2026, 11, 27)
    assert stale_note("2026-06-01", today) is None
    note = stale_note("2025-03", today)
    assert note is not None and "2025-03" in note and "over a year old" in note
    assert stale_note(None, today) is None and stale_note("sometime", today) is None


def test_the_packaged_file_loads_from_a_copy(tmp_path: Path) -> None:
    from importlib.resources import files

    from hwadvisor.advise import load_prices

    path = tmp_path / "prices.toml"
    path.write_text(
        files("hwadvisor.catalog").joinpath("prices.toml").read_text("utf-8"), encoding="utf-8"
    )
    copied = load_prices(path)
    built_in = builtin_prices()
    assert copied.cards == built_in.cards and copied.instances == built_in.instances


def test_one_h200_is_rented_as_one_not_as_an_eight_gpu_instance() -> None:
    """The first real GPU run (an H200) was priced at an 8-GPU instance's $63/h for one GPU."""
    c = option_costs(builtin_prices(), gpu="H200 SXM", gpus=1, seconds=3600)
    assert c.hourly is not None and c.hourly < 6.0, c.rent_as
    assert c.rent_as is not None and "1x" in c.rent_as


def test_a_gpu_rented_only_in_larger_instances_says_so(tmp_path: Path) -> None:
    """Where the only instances of a GPU hold more of them than asked, the whole instance is
    what one pays, and the answer says it is the smallest on offer."""
    from hwadvisor.advise.pricing import load_prices

    own = tmp_path / "prices.toml"
    own.write_text(
        'currency = "EUR"\n[electricity]\nkwh_price = 0.3\nsource = "s"\ndate = "2026-11-01"\n'
        '[[instance]]\nprovider = "Ours"\nname = "8x"\ngpu = "L4"\ngpus = 8\nhourly = 16.0\n'
        'what = "w"\nsource = "s"\ndate = "2026-11-01"\n',
        encoding="utf-8",
    )
    c = option_costs(load_prices(own), gpu="L4", gpus=2, seconds=3600)
    assert c.hourly == pytest.approx(16.0)
    assert c.rent_as is not None and "smallest instance of this GPU on offer" in c.rent_as
    assert "8× L4" in c.rent_as


def test_a_stand_in_rental_reads_as_one_parenthesis_after_a_named_offer() -> None:
    from hwadvisor.advise.pricing import builtin_prices, option_costs

    prices = builtin_prices()
    c = option_costs(prices, gpu="Intel Arc B580", gpus=1, seconds=None)
    assert c.rented_stand_in and c.rent_as is not None
    assert ") (" not in c.rent_as and c.rent_as.count("(") == c.rent_as.count(")")
    assert "as fast: no cloud rents the Intel Arc B580" in c.rent_as


def test_a_card_sold_several_at_a_time_is_bought_in_whole_lots(tmp_path: Path) -> None:
    """A module made for a baseboard (an MI300X, an SXM GPU) is sold only with the rest of
    its board: any count is bought in whole lots, with a host for the lot, and says so."""
    from hwadvisor.advise.pricing import load_prices

    own = tmp_path / "prices.toml"
    rows = [
        ("card", 'gpu = "L4"\nprice = 2000.0\nsold_in = 4\n'),
        ("host", "gpus = 4\nprice = 3000.0\n"),
        ("host", "gpus = 8\nprice = 7000.0\n"),
    ]
    own.write_text(
        'currency = "USD"\n'
        + "".join(
            f'[[{table}]]\n{body}what = "w"\nsource = "s"\ndate = "2026-11-01"\n'
            for table, body in rows
        ),
        encoding="utf-8",
    )
    prices = load_prices(own)
    for gpus in range(1, 9):
        c = option_costs(prices, gpu="L4", gpus=gpus, seconds=3600)
        lot = 4 if gpus <= 4 else 8
        assert c.lot == 4 and c.bought_gpus == lot
        assert c.purchase == pytest.approx(2000.0 * lot + (3000.0 if lot == 4 else 7000.0))
        assert ("sold 4 at a time" in (c.note or "")) == (lot > gpus)
    # nine need three lots of 4, and no host holds twelve
    nine = option_costs(prices, gpu="L4", gpus=9, seconds=3600)
    assert nine.purchase is None and nine.note == "no host for 12 cards in the price catalog"


def test_the_built_in_book_buys_each_card_in_its_own_lots() -> None:
    prices = builtin_prices()
    for name, card in prices.cards.items():
        for gpus in (1, 2, 3, 4):
            c = option_costs(prices, gpu=name, gpus=gpus, seconds=None)
            assert c.lot == card.sold_in
            if c.purchase is not None:
                assert c.bought_gpus is not None and c.bought_gpus % card.sold_in == 0
                assert gpus <= c.bought_gpus < gpus + card.sold_in
    assert prices.cards["AMD Instinct MI300X"].sold_in == 8


def test_a_lot_of_none_is_refused_with_one_line(tmp_path: Path) -> None:
    from hwadvisor.advise.pricing import load_prices
    from hwadvisor.errors import InputError

    own = tmp_path / "prices.toml"
    own.write_text(
        '[[card]]\ngpu = "L4"\nprice = 2000.0\nsold_in = 0\nsource = "s"\ndate = "2026-11-01"\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        load_prices(own)
    assert "sold_in" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "body",
    [
        "memory_bandwidth_gbs = 83.2\ncpu_tflops = 0.8\n",  # no memory_gb
        "memory_gb = 32\nmemory_bandwidth_gbs = 83.2\n",  # no cpu_tflops
        'gpu = "L4"\ngpus = 1\nmemory_gb = 32\nmemory_bandwidth_gbs = 83.2\ncpu_tflops = 0.8\n',
    ],
)
def test_a_cpu_system_without_all_its_figures_is_refused_with_one_line(
    tmp_path: Path, body: str
) -> None:
    from hwadvisor.advise.pricing import load_prices
    from hwadvisor.errors import InputError

    own = tmp_path / "prices.toml"
    own.write_text(
        f'[[system]]\nname = "box"\ncores = 8\nprice = 900.0\n{body}source = "s"\n'
        'date = "2026-11-01"\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        load_prices(own)
    assert "cpu_tflops" in str(err.value) and "\n" not in str(err.value)
