"""Played CPU loads for the benchmark cases: a load monitor whose readers are fakes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hwadvisor.probes.bench.harness import LoadMonitor


@dataclass
class PlayedLoad:
    """Others' CPUs to report, one value per look (the last one repeats), on a fake clock.

    ``others()`` of the monitor is (busy delta − own delta) / wall: the fake advances the clock
    by one second per reading pair and reports busy = own + others.
    """

    values: Sequence[float]
    cpus: int = 2
    looks: int = 0
    _own: float = 0.0
    _busy: float = 0.0
    _now: float = 0.0
    _plan: Iterator[float] = field(init=False)

    def __post_init__(self) -> None:
        self._plan = iter(self.values)
        self._current = self.values[0] if self.values else 0.0

    def clock(self) -> float:
        return self._now

    def busy(self, _cpus: Sequence[int] | None) -> float:
        return self._busy

    def own(self) -> float:
        return self._own

    def start_look(self) -> None:
        self._current = next(self._plan, self._current)
        self.looks += 1

    def monitor(self) -> LoadMonitor:
        played = self

        class _Monitor(LoadMonitor):
            def start(self) -> None:
                played.start_look()
                super().start()

            def others(self) -> float | None:
                # One second of wall time, ``current`` CPUs of others' work in it.
                played._now += 1.0
                played._busy += played._current
                return super().others()

        return _Monitor(cpus=list(range(self.cpus)), busy=self.busy, own=self.own, clock=self.clock)


def quiet(cpus: int = 2) -> LoadMonitor:
    """A monitor that always finds the other CPUs idle."""
    return PlayedLoad([0.0], cpus=cpus).monitor()


def install(monkeypatch: object, monitor: LoadMonitor) -> list[object]:
    """Make the benchmark child's CPU load watch use ``monitor`` and never wait for real.

    Returns a list that receives each load state the child creates.
    """
    from hwadvisor.probes.bench import cpu

    real = cpu.start_load_watch
    states: list[object] = []

    def watch(usable: int, retry_budget_s: float, _monitor: LoadMonitor | None = None) -> object:
        state = real(usable, retry_budget_s, monitor)
        state.wait = lambda _seconds: None
        states.append(state)
        return state

    monkeypatch.setattr(cpu, "start_load_watch", watch)  # type: ignore[attr-defined]
    return states
