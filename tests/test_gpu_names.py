"""GPU names as users type them (``--assume-gpu``, ``hwadvisor gpus FILTER``): resolve_gpu is
strict (an "RTX 4090 Ti" is no RTX 4090), says which row it took when a name fits several,
and find_gpu_peak (the probes' matcher) reads a memory size in a name."""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.advise.names import GpuRow, gpu_rows, nearest_gpus, resolve_gpu, split_count
from hwadvisor.catalog import GpuPeak, find_gpu_peak, load_catalog
from hwadvisor.errors import UsageError

GIB = 2**30
ROWS = load_catalog()
BY_NAME = {row.name: row for row in ROWS}

# --------------------------------------------------------------------------------------------
# One row, no note

NAMED = [
    # Brand words, case, spaces and hyphens do not matter.
    ("RTX 4090", "GeForce RTX 4090"),
    ("rtx4090", "GeForce RTX 4090"),
    ("RTX-4090", "GeForce RTX 4090"),
    ("RTX_4090", "GeForce RTX 4090"),
    ("4090", "GeForce RTX 4090"),
    ("geforce rtx 4090", "GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ("GEFORCE RTX 4090", "GeForce RTX 4090"),
    ("geforcertx4090", "GeForce RTX 4090"),
    ("  RTX   4090  ", "GeForce RTX 4090"),
    # Variant words name their own card.
    ("RTX 4090 D", "GeForce RTX 4090 D"),
    ("4090D", "GeForce RTX 4090 D"),
    ("RTX 4090 Laptop", "GeForce RTX 4090 Laptop GPU"),
    ("RTX 4090 Mobile", "GeForce RTX 4090 Laptop GPU"),
    ("RTX 4070 Ti", "GeForce RTX 4070 Ti"),
    ("4070 super", "GeForce RTX 4070 SUPER"),
    ("RTX 4070 Ti SUPER", "GeForce RTX 4070 Ti SUPER"),
    ("rtx4070tisuper", "GeForce RTX 4070 Ti SUPER"),
    ("RTX 3080 Ti", "GeForce RTX 3080 Ti"),
    ("GTX 1080 Ti", "GeForce GTX 1080 Ti"),
    # The memory decides.
    ("A100 40GB", "A100 40GB"),
    ("a100 40 gb", "A100 40GB"),
    ("A100-40GB", "A100 40GB"),
    ("A100 PCIe 40GB", "A100 40GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
    ("A100 SXM4 80GB", "A100 SXM4 80GB"),
    ("A100 80GB PCIe", "A100 PCIe 80GB"),
    ("RTX 3080 12GB", "GeForce RTX 3080 (12 GB)"),
    ("RTX 3080 10 GB", "GeForce RTX 3080 (10 GB)"),
    ("RTX 3060 8GB", "GeForce RTX 3060 (8 GB)"),
    ("GTX 1060 3GB", "GeForce GTX 1060 3GB"),
    ("V100 SXM2 32GB", "V100 SXM2 32GB"),
    ("Tesla V100-PCIE-32GB", "V100 PCIe 32GB"),
    ("V100 SXM2 16GB", "V100 SXM2"),  # 16 and 32 GB boards share that row
    ("RTX 4060 Ti 16GB", "GeForce RTX 4060 Ti"),
    ("GH200 144GB", "GH200 (144 GB HBM3e)"),
    ("GH200 96 GB", "GH200 (96 GB HBM3)"),
    ("MI50 32GB", "AMD Radeon Instinct MI50 32GB"),
    ("A770 8GB", "Intel Arc A770 (8 GB)"),
    ("Max 1550 64GB", "Intel Data Center GPU Max 1550 (one stack)"),
    # The form named.
    ("H100 SXM", "H100 SXM"),
    ("H100 SXM5", "H100 SXM"),
    ("h100-pcie", "H100 PCIe"),
    ("H100 PCIe 80GB", "H100 PCIe"),
    ("H100 NVL", "H100 NVL"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("H200 NVL", "H200 NVL"),
    # Short names, whole words only.
    ("L4", "L4"),
    ("L40", "L40"),
    ("L40S", "L40S"),
    ("A10", "A10"),
    ("A10G", "A10G"),
    ("T4", "T4"),
    ("Tesla T4", "T4"),
    ("K40m", "Tesla K40"),
    ("V100S", "V100S PCIe"),
    ("K80", "Tesla K80 (one GPU)"),
    ("GB200", "GB200 (Blackwell GPU)"),
    ("B200", "B200"),
    # Family words may be left out.
    ("A6000", "RTX A6000"),
    ("RTX 6000 Ada", "RTX 6000 Ada Generation"),
    ("Quadro RTX 6000", "Quadro RTX 6000"),
    ("M1", "Apple M1"),
    ("Apple M2 Max", "Apple M2 Max"),
    ("m3 ultra", "Apple M3 Ultra"),
    ("Intel(R) Arc(TM) B580 Graphics", "Intel Arc B580"),
    ("B580", "Intel Arc B580"),
    ("Arc Pro A60", "Intel Arc Pro A60"),
    ("Max 1100", "Intel Data Center GPU Max 1100"),
    ("GPU Max 1550", "Intel Data Center GPU Max 1550"),
    # Other vendors, other words.
    ("MI300X", "AMD Instinct MI300X"),
    ("AMD Instinct MI250X", "AMD Instinct MI250X (one GCD)"),
    ("MI250", "AMD Instinct MI250 (one GCD)"),
    ("7900 XTX", "AMD Radeon RX 7900 XTX"),
    ("Radeon RX 7900 XT", "AMD Radeon RX 7900 XT"),
    ("W7900", "AMD Radeon PRO W7900"),
    ("Titan X Pascal", "TITAN X (Pascal)"),
    ("GTX TITAN X", "GeForce GTX TITAN X"),
]


@pytest.mark.parametrize(("typed", "expected"), NAMED)
def test_a_name_that_names_one_row_resolves_to_it_without_a_note(typed: str, expected: str) -> None:
    resolved = resolve_gpu(typed)
    assert (resolved.peak, resolved.note) == (BY_NAME[expected], None)


# --------------------------------------------------------------------------------------------
# Several rows: one taken, the others named

AMBIGUOUS = [
    ("H100", "H100 SXM", "H100 PCIe, H100 NVL"),  # documented: 'a bare "H100" is taken as SXM'
    ("nvidia h100", "H100 SXM", "H100 PCIe, H100 NVL"),
    ("H100 80GB", "H100 SXM", "H100 PCIe"),  # the NVL has 94 GB
    ("H200", "H200 SXM", "H200 NVL"),  # documented: 'NVML names it "NVIDIA H200"'
    ("NVIDIA H200", "H200 SXM", "H200 NVL"),
    ("A100", "A100 SXM4 80GB", "A100 PCIe 80GB, A100 40GB"),
    ("A100 80GB", "A100 SXM4 80GB", "A100 PCIe 80GB"),
    ("A100 SXM4", "A100 SXM4 80GB", "A100 40GB"),
    ("A100 PCIe", "A100 PCIe 80GB", "A100 40GB"),
    ("V100", "V100 SXM2", "V100 PCIe, V100 SXM2 32GB, V100 PCIe 32GB"),
    ("V100 32GB", "V100 SXM2 32GB", "V100 PCIe 32GB"),
    ("Tesla P100", "Tesla P100 SXM2 16GB", "Tesla P100 PCIe 16GB, Tesla P100 PCIe 12GB"),
    ("P100 PCIe", "Tesla P100 PCIe 16GB", "Tesla P100 PCIe 12GB"),
    ("GH200", "GH200 (96 GB HBM3)", "GH200 (144 GB HBM3e)"),
    ("RTX 3080", "GeForce RTX 3080 (10 GB)", "GeForce RTX 3080 (12 GB)"),
    ("NVIDIA GeForce RTX 3080", "GeForce RTX 3080 (10 GB)", "GeForce RTX 3080 (12 GB)"),
    ("3060", "GeForce RTX 3060 (12 GB)", "GeForce RTX 3060 (8 GB)"),
    ("RTX 2060", "GeForce RTX 2060 (6 GB)", "GeForce RTX 2060 (12 GB)"),
    ("GTX 1060", "GeForce GTX 1060 6GB", "GeForce GTX 1060 3GB"),
    ("Arc A770", "Intel Arc A770 (16 GB)", "Intel Arc A770 (8 GB)"),
]


@pytest.mark.parametrize(("typed", "taken", "others"), AMBIGUOUS)
def test_a_name_that_fits_several_rows_takes_one_and_names_the_others(
    typed: str, taken: str, others: str
) -> None:
    resolved = resolve_gpu(typed)
    assert resolved.peak == BY_NAME[taken]
    shown = " ".join(typed.split())
    assert resolved.note == (
        f"“{shown}” taken as {taken} (also in the catalog: {others}; name one to choose)"
    )


def test_the_h100_note_reads_as_documented() -> None:
    assert resolve_gpu("H100").note == (
        "“H100” taken as H100 SXM (also in the catalog: H100 PCIe, H100 NVL; name one to choose)"
    )


# --------------------------------------------------------------------------------------------
# No such card

UNKNOWN = [
    "RTX 4090 Ti",  # no such card: not silently an RTX 4090
    "4090 Ti",
    "RTX 4090 SUPER",
    "RTX 4090 48GB",  # no 4090 with 48 GB
    "RTX 4090 16GB",  # 16 GB is the laptop part, and "Laptop" was not typed
    "RTX 5095",
    "H300",
    "H100 SXM4",  # the H100 is SXM5
    "H100 NVL 80GB",  # the NVL has 94 GB
    "A100 48GB",
    "MI300",  # MI300X or MI300A: different products
    "RTX 3090 Ti Ti",
    "GTX 4090",
    "RTX 4080S",
    "Apple M2 Ultra Max",
    "L4 Ti",
    "RTX",
]


@pytest.mark.parametrize("typed", UNKNOWN)
def test_a_name_with_words_no_row_has_is_a_usage_error_naming_the_closest(typed: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_gpu(typed)
    message = str(info.value)
    assert "\n" not in message
    assert re.fullmatch(
        rf"unknown GPU {re.escape(repr(typed))}: the catalog has no such card; "
        r"closest: [^;]+ \(hwadvisor gpus lists them\)",
        message,
    ), message
    closest = message.split("closest: ", 1)[1].removesuffix(" (hwadvisor gpus lists them)")
    assert closest.split(", ") == nearest_gpus(typed)


def test_the_4090_ti_error_names_the_4090s_first() -> None:
    with pytest.raises(UsageError) as info:
        resolve_gpu("RTX 4090 Ti")
    assert str(info.value) == (
        "unknown GPU 'RTX 4090 Ti': the catalog has no such card; closest: GeForce RTX 4090, "
        "GeForce RTX 4090 D, GeForce RTX 4070 Ti (hwadvisor gpus lists them)"
    )


@pytest.mark.parametrize("typed", ["", "   ", "NVIDIA", "GeForce GPU", "80GB"])
def test_a_name_without_model_words_is_a_usage_error(typed: str) -> None:
    with pytest.raises(UsageError) as info:
        resolve_gpu(typed)
    assert str(info.value) == (
        f"unknown GPU {typed!r}: the catalog has no such card (hwadvisor gpus lists them)"
    )


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        ("RTX 4090 Ti", ["GeForce RTX 4090", "GeForce RTX 4090 D"]),
        ("RTX 4090 16GB", ["GeForce RTX 4090"]),  # a memory size is no model number
        ("RTX 5095", ["GeForce RTX 5090"]),
        ("RTX 4909", ["GeForce RTX 4090"]),  # a typo in the number
        ("RTX 4090 Laptop Ti", ["GeForce RTX 4090 Laptop GPU"]),
    ],
)
def test_nearest_names_put_the_model_number_asked_first(typed: str, first: list[str]) -> None:
    assert nearest_gpus(typed)[: len(first)] == first


# --------------------------------------------------------------------------------------------
# Properties over the whole catalog


def _spellings(name: str) -> list[str]:
    return [
        name,
        name.upper(),
        name.lower(),
        name.replace(" ", "-"),
        name.replace(" ", "_"),
        re.sub(r"(?<=[A-Za-z]) (?=\d)", "", name),  # "RTX4090", "A100SXM4"
        f"  {name} ",
    ]


@given(row=st.sampled_from(ROWS), spelling=st.integers(0, len(_spellings("x")) - 1))
def test_every_row_name_resolves_to_itself_without_a_note(row: GpuPeak, spelling: int) -> None:
    typed = _spellings(row.name)[spelling]
    found = resolve_gpu(typed)
    assert (found.peak, found.note) == (row, None)


def _base_words(name: str) -> Counter[str]:
    """Words of a catalog name outside parentheses, lower case (an independent reading)."""
    return Counter(re.findall(r"[a-z0-9]+", re.sub(r"\([^)]*\)", " ", name.lower())))


def _has_variant(row: GpuPeak, word: str) -> bool:
    wanted = _base_words(row.name) + Counter([word])
    return any(wanted <= _base_words(other.name) for other in ROWS)


WITHOUT_TI = [row for row in ROWS if not _has_variant(row, "ti")]


@given(row=st.sampled_from(WITHOUT_TI))
def test_a_ti_after_a_name_without_a_ti_variant_is_refused(row: GpuPeak) -> None:
    with pytest.raises(UsageError, match="the catalog has no such card"):
        resolve_gpu(f"{row.name} Ti")


@given(row=st.sampled_from(ROWS), suffix=st.sampled_from([" Ultra2", "-Ultra2", " Ultra 2"]))
def test_a_suffix_no_row_has_is_refused(row: GpuPeak, suffix: str) -> None:
    with pytest.raises(UsageError, match="the catalog has no such card"):
        resolve_gpu(row.name + suffix)


def test_some_rows_do_have_a_ti_variant() -> None:
    assert "GeForce RTX 4070" not in {row.name for row in WITHOUT_TI}
    assert resolve_gpu("GeForce RTX 4070 Ti").peak.name == "GeForce RTX 4070 Ti"
    assert "GeForce RTX 4090" in {row.name for row in WITHOUT_TI}


@given(text=st.text(max_size=40))
def test_any_text_resolves_or_is_a_one_line_usage_error(text: str) -> None:
    try:
        resolved = resolve_gpu(text)
    except UsageError as exc:
        assert "\n" not in str(exc)
    else:
        assert resolved.peak in ROWS


# --------------------------------------------------------------------------------------------
# The listing


def test_gpu_rows_lists_the_whole_catalog_in_its_order() -> None:
    rows = gpu_rows()
    assert [r.name for r in rows] == [row.name for row in ROWS]
    assert gpu_rows("") == rows


def test_a_gpu_row_carries_the_listing_columns() -> None:
    h100 = next(r for r in gpu_rows("h100 sxm"))
    peak = BY_NAME["H100 SXM"]
    assert h100 == GpuRow(
        name="H100 SXM",
        vendor="nvidia",
        gpu_class="datacenter",
        architecture=peak.architecture,
        memory_gb=80.0,
        tensor_tflops=peak.bf16_tflops,
        tensor_precision="bf16",
        fp32_tflops=peak.fp32_tflops,
        bandwidth_gbs=peak.bandwidth_gbs,
    )


def test_a_gpu_row_reads_as_json() -> None:
    row = gpu_rows("h100 nvl")[0]
    data = row.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["name"] == "H100 NVL" and data["tensor_precision"] == "bf16"
    assert list(data) == [field.name for field in dataclasses.fields(GpuRow)]


def test_the_tensor_column_falls_back_to_fp16_then_to_nothing() -> None:
    fp16_only = next(row for row in ROWS if row.bf16_tflops is None and row.fp16_tflops)
    listed = next(r for r in gpu_rows() if r.name == fp16_only.name)
    assert (listed.tensor_tflops, listed.tensor_precision) == (fp16_only.fp16_tflops, "fp16")
    pascal = next(r for r in gpu_rows("GTX 1080"))
    assert (pascal.tensor_tflops, pascal.tensor_precision) == (None, None)


@pytest.mark.parametrize(
    ("filter", "names"),
    [
        ("4090", ["GeForce RTX 4090 D", "GeForce RTX 4090", "GeForce RTX 4090 Laptop GPU"]),
        ("rtx4090", ["GeForce RTX 4090 D", "GeForce RTX 4090", "GeForce RTX 4090 Laptop GPU"]),
        ("H100", ["H100 SXM", "H100 PCIe", "H100 NVL"]),
        ("nvidia h100", ["H100 SXM", "H100 PCIe", "H100 NVL"]),
        (
            "80GB",
            [
                "H100 SXM",
                "H100 PCIe",
                "A100 SXM4 80GB",
                "A100 PCIe 80GB",
                "A800 SXM4 80GB",
                "A800 PCIe 80GB",
                "H800 SXM",
                "H800 PCIe",
            ],
        ),
        ("sxm4", ["A100 SXM4 80GB", "A100 40GB", "A800 SXM4 80GB"]),
        ("MI300", ["AMD Instinct MI300X", "AMD Instinct MI300A"]),
        (
            "apple ultra",
            ["Apple M1 Ultra", "Apple M2 Ultra", "Apple M3 Ultra", "Apple M3 Ultra (60-core GPU)"],
        ),
        ("no such card", []),
    ],
)
def test_the_filter_keeps_rows_with_every_word(filter: str, names: list[str]) -> None:
    assert [r.name for r in gpu_rows(filter)] == names


def test_the_filter_matches_vendor_and_class() -> None:
    rows = gpu_rows("amd datacenter")
    assert rows and all(r.vendor == "amd" and r.gpu_class == "datacenter" for r in rows)
    assert len(rows) == sum(1 for p in ROWS if p.vendor == "amd" and p.gpu_class == "datacenter")
    assert all(r.gpu_class == "workstation" for r in gpu_rows("workstation"))


# --------------------------------------------------------------------------------------------
# find_gpu_peak: a memory size in the name


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("A100 40GB", "A100 40GB"),
        ("NVIDIA A100 40GB", "A100 40GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
        ("A100 80GB", "A100 SXM4 80GB"),
        ("NVIDIA GeForce RTX 3080 12GB", "GeForce RTX 3080 (12 GB)"),
        ("NVIDIA GeForce RTX 3060 8GB", "GeForce RTX 3060 (8 GB)"),
        ("NVIDIA GH200 144G HBM3e", "GH200 (144 GB HBM3e)"),
        # Not a size of any row it could be: the superchip's memory, no tie-breaker.
        ("NVIDIA GH200 480GB", "GH200 (96 GB HBM3)"),
        ("A100 48GB", "A100 SXM4 80GB"),
        # "10G" of "A10G" is no memory size.
        ("NVIDIA A10G", "A10G"),
    ],
)
def test_a_memory_size_in_the_name_settles_a_tie(device: str, expected: str) -> None:
    found = find_gpu_peak(device, fallback=False)
    assert found is not None and found.name == expected


def test_the_reported_memory_still_beats_the_name() -> None:
    found = find_gpu_peak("NVIDIA A100 40GB", 80 * GIB, fallback=False)
    assert found is not None and found.name == "A100 SXM4 80GB"
    found = find_gpu_peak("NVIDIA A100", 40 * GIB, fallback=False)
    assert found is not None and found.name == "A100 40GB"


@pytest.mark.parametrize(
    "row", [row for row in ROWS if re.search(r"\d ?GB\b", row.name)], ids=lambda row: row.name
)
def test_a_row_whose_name_states_its_memory_is_found_by_that_name(row: GpuPeak) -> None:
    assert find_gpu_peak(row.name, fallback=False) == row


def test_every_row_is_found_by_its_own_name() -> None:
    """A row's name as the catalog writes it (the price book's and the answer's GPUs are named
    so) is that row, "(one stack)" included; with a reported memory the matching still
    weighs it."""
    wrong = [row.name for row in ROWS if find_gpu_peak(row.name, fallback=False) != row]
    assert wrong == []
    one_stack = find_gpu_peak("Intel Data Center GPU Max 1550 (one stack)", 128 * GIB)
    assert one_stack is not None and one_stack.name == "Intel Data Center GPU Max 1550"


# --------------------------------------------------------------------------------------------
# Apple chips as people name them: the Mac around the chip, the GPU's core count


APPLE_FULL = [row for row in ROWS if row.vendor == "apple" and "core GPU" not in row.name]


@pytest.mark.parametrize("row", APPLE_FULL, ids=lambda r: r.name)
@pytest.mark.parametrize(
    "form",
    ["{chip} {n}-core", "{chip} {n}-core GPU", "Apple {chip} ({n}-core GPU)", "{chip} {n}c",
     "Mac Studio {chip} {n} GPU cores", "MacBook Pro {chip} 12-core CPU {n}-core GPU 64GB",
     "{chip} 12/{n}", "MacBook Pro {chip} (12/{n}) 64GB", "{chip} 12C/{n}C",
     "{chip} 12C CPU {n}C GPU"],
)  # fmt: skip
def test_an_apple_chip_with_fewer_gpu_cores_scales_its_compute_not_its_bandwidth(
    row: GpuPeak, form: str
) -> None:
    chip = row.name.removeprefix("Apple ")
    full = row.gpu_cores
    assert full is not None and row.memory_min_gb, row.name  # every Apple row says both
    for n in (full, full - 2):
        got = resolve_gpu(form.format(chip=chip, n=n)).peak
        if n == full:
            assert got is row  # the full chip: its own row
            continue
        # a row of that core count where the catalog has one (its own bandwidth), else the
        # full chip's compute scaled to the cores, its bandwidth as listed
        assert got.name.startswith(row.name) and f"({n}-core GPU)" in got.name
        if got.name not in BY_NAME:
            assert got.fp32_tflops == pytest.approx(row.fp32_tflops * n / full, abs=1e-3)
            assert got.bandwidth_gbs == row.bandwidth_gbs
        else:
            assert got.fp32_tflops < row.fp32_tflops
    with pytest.raises(UsageError, match=f"at most {full} GPU cores"):
        resolve_gpu(f"{chip} {full + 8}-core")


def test_a_core_count_is_read_after_an_apple_chip_only() -> None:
    # "GPU" after a model number names no core count on a discrete card
    assert resolve_gpu("GTX 1080 GPU").peak.name == "GeForce GTX 1080"
    assert resolve_gpu("Tesla V100 SXM2 32GB").peak.name == "V100 SXM2 32GB"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        # one of the row's names whole, with words of its other names beside it
        (
            "AMD Ryzen AI Max+ 395 (Radeon 8060S, Strix Halo)",
            "AMD Radeon 8060S (Ryzen AI Max+ 395)",
        ),
        ("Strix Halo Radeon 8060S", "AMD Radeon 8060S (Ryzen AI Max+ 395)"),
        ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", "GeForce RTX 3050 Ti Laptop GPU"),
        ("DGX Spark GB10", "NVIDIA GB10 (DGX Spark)"),
    ],
)
def test_names_of_one_product_together_name_it(typed: str, expected: str) -> None:
    assert resolve_gpu(typed).peak.name == expected


@pytest.mark.parametrize(
    "typed", ["H100 SXM PCIe", "RTX 4090 Ti", "M2 Pro Max", "Strix Halo 8050S"]
)
def test_words_of_two_products_name_neither(typed: str) -> None:
    with pytest.raises(UsageError):
        resolve_gpu(typed)


def test_a_laptop_only_part_typed_without_laptop_finds_its_row_and_says_so() -> None:
    """Over every laptop row: its name without "Laptop GPU" / "Mobile" finds it, with a note,
    exactly where no other row takes that name (a desktop card's name stays the desktop
    card's: "RTX 4090" is never the laptop part)."""

    def brandless(name: str) -> str:
        return re.sub(r"^(GeForce|NVIDIA)\s+", "", name)

    laptops = [r for r in ROWS if re.search(r"Laptop|Mobile", r.name)]
    assert len(laptops) >= 15
    both = only = 0
    for row in laptops:
        bare = re.sub(r"\s*(Laptop GPU|Laptop|Mobile)\b", "", row.name).strip()
        desktop = [
            r for r in ROWS
            if r is not row and not re.search(r"Laptop|Mobile|Max-Q", r.name)
            and brandless(r.name) == brandless(bare)
        ]  # fmt: skip
        try:
            found = resolve_gpu(bare)
        except UsageError:
            found = None
        if desktop:
            both += 1
            assert found is not None and found.peak in desktop, (bare, found)
        elif found is not None and found.peak is row:
            only += 1
            assert found.note and "no desktop card" in found.note
    assert both >= 5 and only >= 3


def test_a_listing_filter_word_of_letters_and_digits_stays_one_word() -> None:
    """``hwadvisor gpus a16`` lists the A16, not the "Arc A770 (16 GB)" whose words hold an "a"
    and a "16"; over every row, its model word (the first with letters and digits, not a
    memory size, which filters by memory) finds it, and every row listed holds that word."""
    rows = gpu_rows("a16")
    assert [r.name for r in rows] == ["A16"]
    for peak in ROWS:
        word = next(
            (w for w in re.findall(r"[A-Za-z0-9]+", peak.name) if re.search(r"\d", w)
             and re.search(r"[A-Za-z]", w) and not re.fullmatch(r"\d+G[Bi]?B?", w)),
            None,
        )  # fmt: skip
        if word is None:
            continue
        listed = gpu_rows(word)
        assert peak.name in {r.name for r in listed}, (word, peak.name)
        for r in listed:
            row = next(p for p in ROWS if p.name == r.name)
            text = re.sub(r"[^a-z0-9]+", "", " ".join((row.name, *row.match)).lower())
            assert word.lower() in text, (word, r.name)


# --------------------------------------------------------------------------------------------
# A count written with the GPU ("8x H200")

COUNT_FORMS = ("{n}x {g}", "{n}x{g}", "{n} x {g}", "{n} × {g}", "{n}×{g}", "{n}*{g}", "{g} x{n}",
               "{g} x {n}", "{g} × {n}", "{g}*{n}")  # fmt: skip


@pytest.mark.parametrize("form", COUNT_FORMS)
@pytest.mark.parametrize("n", [1, 2, 8, 64, 1024])
def test_a_count_written_with_the_gpu_is_read_in_every_form(form: str, n: int) -> None:
    for gpu in ("H200", "RTX 3090", "A100 80GB", "Radeon RX 7900 XTX", "MI300X"):
        assert split_count(form.format(n=n, g=gpu)) == (gpu, n)
        assert split_count(form.format(n=n, g=gpu), n) == (gpu, n)  # --gpus saying the same


def test_a_name_with_digits_and_an_x_of_its_own_keeps_them() -> None:
    """A card whose name holds an x after digits is a card, not a count ("7900XTX"), and every
    row of the catalog typed as written is itself, with no count."""
    for name in ("7900 XTX", "7900XTX", "RX 580X", "580X", "MI300X", "Titan X", "1080Ti", "3090"):
        assert split_count(name) == (name, 1)
    for row in ROWS:
        assert split_count(row.name) == (row.name, 1), row.name
        assert split_count(row.name, 4) == (row.name, 4)


def test_a_count_and_gpus_that_differ_or_a_zero_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="says 8, --gpus says 4"):
        split_count("8x H200", 4)
    with pytest.raises(UsageError, match="from 1 to 1024"):
        split_count("0x H200")
