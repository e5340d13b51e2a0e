"""What hardware costs: the built-in price catalog (``catalog/prices.toml``, every row with its
source and date) and a user's ``--prices FILE`` over it, and the costs of one option for one run.

Per option: the purchase price (a whole system where the catalog has one, else the cards and a
host for that many cards), the hourly rent of the cheapest cloud instance with that GPU and at
least that many of them (for a CPU: enough vCPUs), one run rented, the energy of one run on
owned hardware (board power × hours × the price of a kWh), and the runs and hours of use after
which buying beats renting. Every figure keeps the date and source of the rows it came from;
prices older than a year are named so.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from hwadvisor.catalog import schema
from hwadvisor.catalog.peaks import CATALOG_RESOURCE, find_gpu_peak
from hwadvisor.catalog.schema import (
    Check,
    DataModel,
    OptNonNegative,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Positive,
    PositiveWhole,
    Text,
    load_toml,
    read_text,
    unique,
)
from hwadvisor.catalog.toml import packaged_kept, parse_toml
from hwadvisor.errors import InputError

#: Prices older than this are shown with their date and a warning.
STALE_DAYS = 365
#: Hours in a year, for "hours of use" wording.
HOURS_PER_YEAR = 8760.0
#: Default electricity price when the catalog has none (USD per kWh).
DEFAULT_KWH_PRICE = 0.17

_DATE = Check.reading(
    "a date (YYYY-MM-DD or YYYY-MM)",
    lambda v: str(v) if isinstance(v, (str, datetime.date)) and str(v).strip() else None,
)
Date = Annotated[str, _DATE]


# --------------------------------------------------------------------------------------------
# The file


class _Sourced(DataModel):
    source: Text
    date: Date


class _Electricity(_Sourced):
    kwh_price: Positive


class _Card(_Sourced):
    gpu: Text
    price: Positive
    """One GPU's price."""
    watts: OptPositive = None
    what: Text = "street price"
    sold_in: PositiveWhole = 1
    """The fewest sold together: a module made for a vendor's baseboard (an OAM or SXM GPU)
    comes 8 at a time, and buying one means buying them all."""

    @model_validator(mode="after")
    def _known(self) -> _Card:
        _check_gpu(self.gpu)
        return self


class _System(_Sourced):
    name: Text
    gpu: OptText = None
    gpus: int = 0
    cores: OptPositiveWhole = None
    memory_gb: OptPositive = None
    """A Mac's unified memory (its GPU's memory); a computer without a GPU's RAM."""
    memory_bandwidth_gbs: OptPositive = None
    """A computer without a GPU: its memory's peak bandwidth (channels x MT/s x 8 bytes)."""
    cpu_tflops: OptPositive = None
    """A computer without a GPU: its cores' FP32 peak. With ``memory_gb`` and
    ``memory_bandwidth_gbs``, serving advice sizes it as the CPU option (class 1)."""
    price: Positive
    watts: OptPositive = None
    what: Text = "list price"

    @model_validator(mode="after")
    def _known(self) -> _System:
        if self.gpu is not None:
            _check_gpu(self.gpu)
        cpu_figures = (self.memory_bandwidth_gbs, self.cpu_tflops)
        if any(v is not None for v in cpu_figures):
            if self.gpu is not None:
                raise ValueError(
                    "memory_bandwidth_gbs and cpu_tflops are a CPU system's, not a GPU's"
                )
            if self.memory_gb is None or None in cpu_figures:
                raise ValueError(
                    "a CPU system sized for serving needs memory_gb, memory_bandwidth_gbs and "
                    "cpu_tflops together"
                )
        return self


class _Host(_Sourced):
    gpus: PositiveWhole
    price: Positive
    watts: OptPositive = None
    what: Text = "host without the cards"


class _Instance(_Sourced):
    provider: Text
    name: Text
    gpu: OptText = None
    gpus: int = 0
    vcpus: OptPositiveWhole = None
    hourly: Positive
    what: Text = "on demand"

    @model_validator(mode="after")
    def _known(self) -> _Instance:
        if self.gpu is not None:
            _check_gpu(self.gpu)
        return self


class _OldPrice(DataModel):
    """The earlier ``[[price]]`` table: a ladder rung's title or role, purchase and hourly."""

    hardware: Text
    purchase: OptNonNegative = None
    hourly: OptNonNegative = None


class _PricesFile(DataModel):
    currency: Text = "USD"
    date: Annotated[str | None, _DATE] = None
    electricity: _Electricity | None = None
    card: list[_Card] = Field(default_factory=list)
    system: list[_System] = Field(default_factory=list)
    host: list[_Host] = Field(default_factory=list)
    instance: list[_Instance] = Field(default_factory=list)
    price: list[_OldPrice] = Field(default_factory=list)

    @model_validator(mode="after")
    def _distinct(self) -> _PricesFile:
        for rows, what in (
            ([c.gpu for c in self.card], "[[card]] gpu"),
            ([s.name for s in self.system], "[[system]] name"),
            ([str(h.gpus) for h in self.host], "[[host]] gpus"),
            ([f"{i.provider} {i.name}" for i in self.instance], "[[instance]] provider and name"),
            ([p.hardware for p in self.price], "[[price]] hardware"),
        ):
            unique(rows, what)
        if not (self.card or self.system or self.host or self.instance or self.price):
            raise ValueError("no prices: give [[card]], [[system]], [[host]] or [[instance]] rows")
        return self


def _check_gpu(name: str) -> None:
    peak = find_gpu_peak(name)
    if peak is None or peak.name != name:
        near = f" (the catalog's name is {peak.name!r})" if peak is not None else ""
        raise ValueError(f"GPU {name!r} is not a name of the GPU catalog{near}")


# --------------------------------------------------------------------------------------------
# The price book


@dataclass(frozen=True)
class Row:
    """One sourced price: what it is, how much, its power, where and when it is from."""

    key: str
    price: float
    watts: float | None
    what: str
    source: str
    date: str
    gpu: str | None = None
    gpus: int = 0
    cores: int | None = None
    vcpus: int | None = None
    provider: str | None = None
    memory_gb: float | None = None
    memory_bandwidth_gbs: float | None = None
    """A CPU system's memory bandwidth (GB/s) and, below, its cores' FP32 TFLOPS."""
    cpu_tflops: float | None = None
    sold_in: int = 1
    """A card's: the fewest sold together (``price`` is one GPU's)."""


@dataclass(frozen=True)
class Prices:
    """The built-in price catalog, with a user's file laid over it."""

    currency: str
    kwh_price: float
    kwh_source: str
    kwh_date: str
    cards: dict[str, Row]
    systems: tuple[Row, ...]
    hosts: tuple[Row, ...]
    instances: tuple[Row, ...]
    by_title: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    """The earlier format: a ladder rung's title or role → (purchase, hourly)."""
    source: str = "built-in price catalog"
    date: str = ""
    """A user file's ``date`` (the earlier format), else empty."""

    def instances_of(self, gpu: str) -> tuple[Row, ...]:
        """The instances with ``gpu`` (an index built once per book: a sweep asks thousands
        of times)."""
        return self._by_gpu.get(gpu, ())

    def as_fast_as(self, gpu: str, gpus: int) -> tuple[Row, ...]:
        """The instances of ``gpus`` GPUs each with at least EQUIVALENT_PEAK_SHARE of
        ``gpu``'s tensor peak and at least its memory (kept per book)."""
        key = (gpu, gpus)
        if key not in self._alike:
            tensor, memory = _tensor(gpu)
            self._alike[key] = tuple(
                i
                for i in self._by_count.get(gpus, ())
                if i.gpu
                and _tensor(i.gpu)[0] >= EQUIVALENT_PEAK_SHARE * tensor
                and _tensor(i.gpu)[1] >= memory
            )
        return self._alike[key]

    @cached_property
    def _alike(self) -> dict[tuple[str, int], tuple[Row, ...]]:
        return {}

    def remembered(self, key: Hashable, make: Callable[[], Costs]) -> Costs:
        """``make()``, kept on this book under ``key``: an option's costs depend on the book's
        rows alone, which do not change once read, and a sweep asks for the same GPU and
        count hundreds of times. The caller does not change what it gets."""
        memo = self._costs
        if key not in memo:
            memo[key] = make()
        return memo[key]

    @cached_property
    def _costs(self) -> dict[Hashable, Costs]:
        return {}

    @cached_property
    def _by_gpu(self) -> dict[str, tuple[Row, ...]]:
        out: dict[str, list[Row]] = {}
        for i in self.instances:
            if i.gpu:
                out.setdefault(i.gpu, []).append(i)
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def _by_count(self) -> dict[int, tuple[Row, ...]]:
        out: dict[int, list[Row]] = {}
        for i in self.instances:
            out.setdefault(i.gpus, []).append(i)
        return {k: tuple(v) for k, v in out.items()}

    def with_kwh(self, kwh_price: float | None) -> Prices:
        if kwh_price is None:
            return self
        return replace(self, kwh_price=kwh_price, kwh_source="--kwh-price", kwh_date="")


def _book(layers: list[tuple[dict[str, Any], str]]) -> Prices:
    """The layers' rows (each a file validated and dumped as plain values), a later layer's
    row replacing an earlier one with the same key."""
    cards: dict[str, Row] = {}
    systems: dict[str, Row] = {}
    hosts: dict[int, Row] = {}
    instances: dict[str, Row] = {}
    old: dict[str, tuple[float | None, float | None]] = {}
    currency = "USD"
    kwh = (DEFAULT_KWH_PRICE, "hwadvisor's default", "")
    date = ""
    for data, _origin in layers:
        currency = data["currency"]
        if (e := data["electricity"]) is not None:
            kwh = (e["kwh_price"], e["source"], e["date"])
        for c in data["card"]:
            cards[c["gpu"]] = Row(
                c["gpu"], c["price"], c["watts"], c["what"], c["source"], c["date"], c["gpu"], 1,
                sold_in=c["sold_in"],
            )  # fmt: skip
        for s in data["system"]:
            systems[s["name"]] = Row(
                s["name"], s["price"], s["watts"], s["what"], s["source"], s["date"], s["gpu"],
                s["gpus"], s["cores"], memory_gb=s["memory_gb"],
                memory_bandwidth_gbs=s["memory_bandwidth_gbs"], cpu_tflops=s["cpu_tflops"],
            )  # fmt: skip
        for h in data["host"]:
            hosts[h["gpus"]] = Row(
                f"host for {h['gpus']}", h["price"], h["watts"], h["what"], h["source"],
                h["date"], gpus=h["gpus"],
            )  # fmt: skip
        for i in data["instance"]:
            instances[f"{i['provider']} {i['name']}"] = Row(
                i["name"], i["hourly"], None, i["what"], i["source"], i["date"], i["gpu"],
                i["gpus"], vcpus=i["vcpus"], provider=i["provider"],
            )  # fmt: skip
        old.update({p["hardware"]: (p["purchase"], p["hourly"]) for p in data["price"]})
        date = data["date"] or date
    return Prices(
        currency=currency,
        kwh_price=kwh[0],
        kwh_source=kwh[1],
        kwh_date=kwh[2],
        cards=cards,
        systems=tuple(systems.values()),
        hosts=tuple(hosts[k] for k in sorted(hosts)),
        instances=tuple(instances.values()),
        by_title=old,
        source=" + ".join(origin for _, origin in layers),
        date=date,
    )


def _plain_file(data: dict[str, Any], origin: str) -> dict[str, Any]:
    """A price file validated, as plain values."""
    return load_toml(_PricesFile, data, origin, InputError).model_dump()


#: What the kept built-in catalog depends on besides the TOML: this module's model, the field
#: checks, and the GPU catalog its GPU names are checked against.
_CODE = (__file__, schema.__file__, str(Path(schema.__file__).with_name(CATALOG_RESOURCE)))


_BUILTIN = "built-in price catalog"


@lru_cache(maxsize=1)
def _builtin() -> tuple[dict[str, Any], Prices]:
    return _read_builtin()


def _read_builtin() -> tuple[dict[str, Any], Prices]:
    """The built-in catalog as plain values (kept validated in the cache folder) and its book;
    kept values that are damaged or foreign are validated again."""

    def plain(data: dict[str, Any]) -> dict[str, Any]:
        return _plain_file(data, "prices.toml")

    def book(kept: dict[str, Any]) -> tuple[dict[str, Any], Prices]:
        return kept, _book([(kept, _BUILTIN)])

    return packaged_kept("prices.toml", InputError, plain, book, _CODE)


def builtin_prices() -> Prices:
    """The built-in price catalog alone (one book per process: ``Prices`` is not changed in
    place, ``with_kwh`` makes a new one)."""
    return _builtin()[1]


def load_prices(path: Path) -> Prices:
    """A user's price file laid over the built-in catalog: a row with the same GPU (cards),
    name (systems), GPU count (hosts) or provider and name (instances) replaces the built-in
    one; the electricity price likewise. The earlier ``[[price]]`` rows (a ladder rung's title
    or role with ``purchase`` and ``hourly``) still work and take precedence. A file in another
    currency than the catalog's stands alone: its rows are the only prices."""
    data = _plain_file(parse_toml(read_text(path, InputError), str(path), InputError), str(path))
    builtin, book = _builtin()
    if data["currency"] != book.currency:
        # Figures in another currency are not mixed with the built-in dollars: the file's
        # own rows are the only prices, and what it does not price has none.
        return _book([(data, str(path))])
    return _book([(builtin, _BUILTIN), (data, str(path))])


def check_prices(prices: Prices, titles: list[str]) -> None:
    """Every earlier-format ``[[price]]`` must name a rung of the ladder (its title or role):
    a price under a name nothing matches would be silently left out. :class:`InputError`."""
    for name in prices.by_title:
        if name not in titles:
            near = difflib.get_close_matches(name, titles, n=3, cutoff=0.3)
            hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
            raise InputError(
                f"{prices.source}: [[price]] hardware {name!r} is not a rung of the hardware "
                f"ladder (a candidate's title or role in the rules){hint}"
            )


# --------------------------------------------------------------------------------------------
# The costs of one option


@dataclass
class Costs:
    purchase: float | None = None
    hourly: float | None = None
    watts: float | None = None
    run: float | None = None
    energy: float | None = None
    break_even_hours: float | None = None
    break_even_runs: float | None = None
    rent_as: str | None = None
    rented_stand_in: bool = False
    """The rental is another GPU, as fast, because no cloud rents this one."""
    rented_gpus: int | None = None
    """The GPUs the rental holds (more than the option's where the smallest instance of that
    GPU is larger); None for a CPU instance or no rental."""
    bought_gpus: int | None = None
    """The GPUs the purchase buys (more than the option's where the GPU is sold only so many
    at a time); None for a system, a CPU or no purchase price."""
    lot: int | None = None
    """Where the catalog sells the GPU as a card: the fewest sold together (1 for a card,
    8 for a module made for a baseboard), whether or not a host for them is priced."""
    date: str | None = None
    source: str | None = None
    note: str | None = None


def _oldest(rows: list[Row]) -> str | None:
    dates = sorted(r.date for r in rows if r.date)
    return dates[0] if dates else None


def _sources(rows: list[Row]) -> str | None:
    seen: list[str] = []
    for r in rows:
        if r.source not in seen:
            seen.append(r.source)
    return "; ".join(seen) or None


def _host(prices: Prices, gpus: int) -> Row | None:
    return next((h for h in prices.hosts if h.gpus >= gpus), None)


def _system(prices: Prices, gpu: str | None, gpus: int, cores: int | None) -> Row | None:
    if gpu is None:
        cpus = [s for s in prices.systems if not s.gpu and s.cores]
        want = cores or 8
        return min(cpus, key=lambda s: (abs((s.cores or 0) - want), s.price), default=None)
    same = [s for s in prices.systems if s.gpu == gpu and s.gpus == gpus]
    return min(same, key=lambda s: s.price, default=None)


#: A cloud GPU stands in for one no cloud rents where it has at least this share of its tensor
#: peak and at least its memory, in the same number.
EQUIVALENT_PEAK_SHARE = 0.8


@lru_cache(maxsize=1024)
def _tensor(name: str | None) -> tuple[float, float]:
    """A GPU's tensor TFLOP/s and memory (the built-in catalog's: a pure lookup, kept)."""
    peak = find_gpu_peak(name or "")
    if peak is None:
        return 0.0, 0.0
    tensor = peak.bf16_tflops or peak.fp16_tflops or peak.fp32_tflops or 0.0
    return tensor, peak.memory_gb or 0.0


def _instance(
    prices: Prices,
    gpu: str | None,
    gpus: int,
    cores: int | None,
    stand_in_ok: Callable[[str], bool] | None = None,
) -> tuple[Row | None, bool]:
    """The cheapest instance with this GPU and that many of them (or more); else the cheapest
    with as many GPUs that are as fast and as large (an equivalent, said so), among the GPUs
    ``stand_in_ok`` accepts where given (those the engine and format run on)."""
    if gpu is None:
        need = 2 * (cores or 8)
        cpus = [i for i in prices.instances if not i.gpu and (i.vcpus or 0) >= need]
        return min(cpus, key=lambda i: (i.price, i.vcpus or 0), default=None), False
    of_gpu = prices.instances_of(gpu)
    exact = [i for i in of_gpu if i.gpus == gpus]
    if exact:
        return min(exact, key=lambda i: i.price), False
    larger = [i for i in of_gpu if i.gpus > gpus]
    if larger:
        return min(larger, key=lambda i: (i.gpus, i.price)), False
    alike = [
        i for i in prices.as_fast_as(gpu, gpus) if stand_in_ok is None or stand_in_ok(i.gpu or "")
    ]
    return min(alike, key=lambda i: i.price, default=None), bool(alike)


def option_costs(
    prices: Prices,
    *,
    gpu: str | None,
    gpus: int,
    cores: int | None = None,
    nodes: int = 1,
    seconds: float | None,
    names: tuple[str, ...] = (),
    stand_in_ok: Callable[[str], bool] | None = None,
) -> Costs:
    """The costs of ``nodes`` machines of ``gpus`` × ``gpu`` (or a CPU of ``cores``) for one
    run of ``seconds``. ``names`` are the option's title and role, for the earlier format's
    ``[[price]]`` rows."""
    hours = seconds / 3600 if seconds is not None else None
    for name in names:
        if name in prices.by_title:
            purchase, hourly = prices.by_title[name]
            out = Costs(
                purchase=purchase,
                hourly=hourly,
                source=prices.source,
                date=prices.date or None,
                note=f"your price for {name}",
            )
            return _finish(out, hours, prices)
    used: list[Row] = []
    out = Costs()
    system = _system(prices, gpu, gpus, cores)
    if system is not None:
        out.purchase, out.watts = system.price * nodes, system.watts and system.watts * nodes
        out.note = f"{system.key} ({system.what})"
        used.append(system)
    elif gpu is not None:
        card = prices.cards.get(gpu)
        # a GPU sold only so many at a time is bought in whole lots, with a host for them all
        bought = -(-gpus // card.sold_in) * card.sold_in if card is not None else gpus
        out.lot = card.sold_in if card is not None else None
        host = _host(prices, bought)
        if card is not None and host is not None:
            out.purchase = (card.price * bought + host.price) * nodes
            out.bought_gpus = bought * nodes
            lot = f" (sold {card.sold_in} at a time)" if bought > gpus else ""
            out.note = f"{bought} × card{lot} + host for up to {host.gpus} cards"
            used += [card, host]
        elif card is None:
            out.note = f"no purchase price for the {gpu} in the price catalog"
        else:
            out.note = f"no host for {bought} cards in the price catalog"
        if card is not None and card.watts is not None:
            # The cards' board power; the host's where the catalog gives it.
            host_watts = host.watts if host is not None and host.watts else 0.0
            out.watts = (card.watts * gpus + host_watts) * nodes
    instance, equivalent = _instance(prices, gpu, gpus, cores, stand_in_ok)
    if instance is not None:
        out.hourly = instance.price * nodes
        count = f"{instance.gpus}× {instance.gpu}" if instance.gpu else f"{instance.vcpus} vCPUs"
        larger = bool(instance.gpu) and not equivalent and instance.gpus > gpus
        out.rented_stand_in = bool(equivalent)
        out.rented_gpus = instance.gpus * nodes if instance.gpu else None
        said = (
            f"{count}, as fast: no cloud rents the {gpu}"
            if equivalent
            else f"{count}: the smallest instance of this GPU on offer"
            if larger
            else None
        )
        name = f"{instance.provider} {instance.key}"
        if said and name.endswith(")"):
            name = f"{name[:-1]}; {said})"  # "1x RTX 4090 (cheapest offer; 1× ..., as fast: ...)"
        elif said:
            name = f"{name} ({said})"
        out.rent_as = name + (f", {nodes} of them" if nodes > 1 else "")
        used.append(instance)
    out.date, out.source = _oldest(used), _sources(used)
    return _finish(out, hours, prices)


def _finish(out: Costs, hours: float | None, prices: Prices) -> Costs:
    energy_per_hour = (out.watts or 0.0) / 1000 * prices.kwh_price if out.watts else None
    if hours is not None:
        if out.hourly is not None:
            out.run = out.hourly * hours
        if energy_per_hour is not None:
            out.energy = energy_per_hour * hours
    if out.purchase is not None and out.hourly is not None:
        saved = out.hourly - (energy_per_hour or 0.0)
        if saved > 0:
            out.break_even_hours = out.purchase / saved
            if hours:
                out.break_even_runs = out.break_even_hours / hours
    return out


def price_age_days(date: str | None, today: datetime.date | None = None) -> int | None:
    """Days since ``date`` (YYYY-MM-DD or YYYY-MM, the first of the month); None if unknown."""
    if not date:
        return None
    try:
        parts = [int(p) for p in date[:10].split("-")]
        when = datetime.date(parts[0], parts[1], parts[2] if len(parts) > 2 else 1)
    except (ValueError, IndexError):
        return None
    return ((today or datetime.date.today()) - when).days


def stale_note(date: str | None, today: datetime.date | None = None) -> str | None:
    """ "prices from 2025-03-01, over a year old: check them" where they are."""
    age = price_age_days(date, today)
    if age is None or age <= STALE_DAYS:
        return None
    return f"prices from {date}, over a year old: check them before you quote them"


def card_price(prices: Prices, gpu: str) -> Row | None:
    return prices.cards.get(gpu)
