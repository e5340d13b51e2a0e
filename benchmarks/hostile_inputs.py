"""Everything a careful user or an attacker can throw at hwadvisor, run as a user would.

Each case runs the real command line in a fresh process with a time limit and is judged on what
a user sees: it must end (no hang), never print a traceback or call itself an internal error on
user input, exit with a documented status, say what went wrong in one line, leave no process
behind, and — for redacted outputs — let no seeded identifier through.

    python benchmarks/hostile_inputs.py [--verbose]

Prints the counts (cases, OK, hangs, tracebacks, internal errors, leaks, orphans) and exits 1
when any is not zero. Targets: 0 of each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UTF16_BOM = b"\xff\xfe"
FIXTURES = ROOT / "tests" / "fixtures"
PROFILE = FIXTURES / "reports" / "single-gpu.json"
CPU_PROFILE = FIXTURES / "profiles" / "v1-cpu-only.json"
RULES = ROOT / "src" / "hwadvisor" / "catalog" / "rules.toml"
LIMIT_S = 30.0

#: Identifiers seeded into the profile the redaction cases use; none may reach a redacted output.
SECRETS = {
    "fqdn": "gpu-node-17.lab.example.org",
    "domain": "lab.example.org",
    "ipv4": "10.23.45.67",
    "mac": "3c:ec:ef:12:34:56",
    "mac_cisco": "001a.2b3c.4d7f",
    "mac_bare": "001A2B3C4D8F",
    "user": "carol",
    "serial": "1324021001234",
}


@dataclass
class Case:
    name: str
    args: list[str]
    ok_codes: tuple[int, ...]
    setup: Callable[[Path], None] | None = None
    stdin_closed_stdout: bool = False
    leak_check: bool = False
    escape_check: bool = False
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    case: Case
    code: int | None
    seconds: float
    problems: list[str]


def _doc(path: Path = PROFILE) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _write(work: Path, name: str, data: str | bytes) -> Path:
    path = work / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _profile_with(work: Path, name: str, change: Callable[[dict], None]) -> None:  # type: ignore[type-arg]
    doc = _doc()
    change(doc)
    _write(work, name, json.dumps(doc))


def _seeded(doc: dict) -> None:  # type: ignore[type-arg]
    doc["host"]["hostname"]["value"] = SECRETS["fqdn"]
    doc["gpus"][0]["serial"] = {"value": SECRETS["serial"], "source": "nvml"}
    doc["findings"].append(
        {
            "id": "seeded",
            "severity": "info",
            "title": "seeded",
            "detail": (
                f"{SECRETS['ipv4']} {SECRETS['mac']} {SECRETS['mac_cisco']} {SECRETS['mac_bare']} "
                f"/home/{SECRETS['user']}/x mail {SECRETS['domain']}"
            ),
            "fix": "none",
        }
    )


def _escaped(doc: dict) -> None:  # type: ignore[type-arg]
    doc["host"]["hostname"]["value"] = "box\u001b]0;pwned\u0007\u001b[2J\u202e"
    doc["gpus"][0]["name"]["value"] += "\u001b[31mRED\u0000"


def _cases() -> list[Case]:
    p = "{work}"
    cases = [
        Case("fifo import", ["import", f"{p}/fifo"], (5,), lambda w: os.mkfifo(w / "fifo")),
        Case("fifo advise", ["advise", "-p", f"{p}/fifo", "-w", "small-cnn"], (5,),
             lambda w: os.mkfifo(w / "fifo")),
        Case("fifo report", ["report", f"{p}/fifo"], (5,), lambda w: os.mkfifo(w / "fifo")),
        Case("fifo diff", ["diff", f"{p}/fifo", str(PROFILE)], (5,),
             lambda w: os.mkfifo(w / "fifo")),
        Case("fifo rules", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--rules",
                            f"{p}/fifo"], (5,), lambda w: os.mkfifo(w / "fifo")),
        Case("fifo prices", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--prices",
                             f"{p}/fifo"], (5,), lambda w: os.mkfifo(w / "fifo")),
        Case("fifo template", ["report", str(PROFILE), "--out", f"{p}/o", "--format", "html",
                               "--template-dir", f"{p}/t"], (5,),
             lambda w: ((w / "t").mkdir(), os.mkfifo(w / "t" / "report.html.j2"))),
        Case("/dev/zero", ["import", "/dev/zero"], (5,)),
        Case("/dev/urandom", ["import", "/dev/urandom"], (5,)),
        Case("directory", ["import", str(FIXTURES)], (5,)),
        Case("missing", ["import", f"{p}/nope.txt"], (5,)),
        Case("empty", ["import", f"{p}/empty.txt"], (5,), lambda w: _write(w, "empty.txt", "")),
        Case("binary", ["import", f"{p}/b.bin"], (5,),
             lambda w: _write(w, "b.bin", bytes(range(256)) * 64)),
        Case("utf-16", ["advise", "-p", f"{p}/u16.json", "-w", "small-cnn"], (0,),
             lambda w: _write(w, "u16.json", UTF16_BOM + PROFILE.read_text().encode("utf-16le"))),
        Case("bom report", ["report", f"{p}/bom.json", "--out", f"{p}/o", "--format", "html"],
             (0,), lambda w: _write(w, "bom.json", b"\xef\xbb\xbf" + PROFILE.read_bytes())),
        Case("40 MB file", ["import", f"{p}/big.txt"], (5,),
             lambda w: _write(w, "big.txt", b"a" * (40 * 1024 * 1024))),
        Case("deep json", ["advise", "-p", f"{p}/deep.json", "-w", "small-cnn"], (5,),
             lambda w: _write(w, "deep.json", '{"schema_version": 4, "x": ' + "[" * 200_000
                              + "]" * 200_000 + "}")),
        Case("deep toml rules", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--rules",
                                 f"{p}/deep.toml"], (5,),
             lambda w: _write(w, "deep.toml", "x = " + "[" * 100_000 + "]" * 100_000)),
        Case("truncated json", ["report", f"{p}/t.json"], (5,),
             lambda w: _write(w, "t.json", PROFILE.read_text()[:5000])),
        Case("schema 99", ["advise", "-p", f"{p}/s.json", "-w", "small-cnn"], (5,),
             lambda w: _profile_with(w, "s.json", lambda d: d.update(schema_version=99))),
        Case("created garbage", ["report", f"{p}/c.json", "--out", f"{p}/o", "--format", "html"],
             (0, 5), lambda w: _profile_with(w, "c.json", lambda d: d.update(created_utc="x"))),
        Case("vram 1e32", ["advise", "-p", f"{p}/v.json", "-w", "resnet50-imagenet"], (0, 5),
             lambda w: _profile_with(
                 w, "v.json", lambda d: d["gpus"][0]["vram_total_bytes"].update(value=1e32))),
        Case("1e27 cpus", ["advise", "-p", f"{p}/c.json", "-w", "resnet50-imagenet"], (0,),
             lambda w: _profile_with(
                 w, "c.json", lambda d: d["cpu"]["logical_cores"].update(value=10**27))),
        Case("best 1e300", ["advise", "-p", f"{p}/b.json", "-w", "resnet50-imagenet"], (0,),
             lambda w: _profile_with(w, "b.json", lambda d: [
                 m.update(best=1e300) for m in d["benchmarks"]["measurements"]])),
        Case("best 0", ["advise", "-p", f"{p}/b.json", "-w", "resnet50-imagenet"], (0,),
             lambda w: _profile_with(w, "b.json", lambda d: [
                 m.update(best=0) for m in d["benchmarks"]["measurements"]])),
        Case("20 MB hostname", ["report", f"{p}/h.json", "--out", f"{p}/o", "--format", "html"],
             (0,), lambda w: _profile_with(
                 w, "h.json", lambda d: d["host"]["hostname"].update(value="h" * 20_000_000))),
        Case("params nan", ["advise", "-p", str(PROFILE), "--params", "nan", "--tokens", "1e9"],
             (2,)),
        Case("params inf", ["advise", "-p", str(PROFILE), "--params", "inf", "--tokens", "1e9"],
             (2,)),
        Case("tokens -inf", ["advise", "-p", str(PROFILE), "--params", "1e9", "--tokens", "-inf"],
             (2,)),
        Case("budget nan", ["scan", "--budget", "nan"], (2,)),
        Case("gpus 0", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--gpus", "0"], (2,)),
        Case("unknown gpu", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--assume-gpu",
                             "RTX 9999"], (2,)),
        Case("template syntax", ["report", str(PROFILE), "--out", f"{p}/o", "--format", "html",
                                 "--template-dir", f"{p}/t"], (5,),
             lambda w: ((w / "t").mkdir(), _write(w / "t", "report.html.j2", "{% if %}"))),
        Case("template undefined", ["report", str(PROFILE), "--out", f"{p}/o", "--format",
                                    "html", "--template-dir", f"{p}/t"], (5,),
             lambda w: ((w / "t").mkdir(), _write(w / "t", "report.html.j2", "{{ nope }}"))),
        Case("template escape", ["report", str(PROFILE), "--out", f"{p}/o", "--format", "html",
                                 "--template-dir", f"{p}/t"], (5,),
             lambda w: ((w / "t").mkdir(), _write(
                 w / "t", "report.html.j2",
                 "{{ cycler.__init__.__globals__.os.popen('touch " + str(w / "PWNED")
                 + "').read() }}"))),
        Case("rules duplicate id", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--rules",
                                    f"{p}/r.toml"], (5,),
             lambda w: _write(w, "r.toml", RULES.read_text() + '\n[[rule]]\nid = "needs-scale"\n'
                              'scenario = 4\nwhen = {}\nbecause = "again"\n')),
        Case("rules unknown key", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--rules",
                                   f"{p}/r.toml"], (5,),
             lambda w: _write(w, "r.toml", RULES.read_text().replace(
                 "[settings]", "[settings]\nmulti_gpu_scalng = 0.5"))),
        Case("stdout closed json", ["advise", "-p", str(PROFILE), "-w", "small-cnn", "--json",
                                    "-"], (4,), stdin_closed_stdout=True),
        Case("stdout closed summary", ["advise", "-p", str(PROFILE), "-w", "small-cnn"], (0,),
             stdin_closed_stdout=True),
        Case("json path sibling", ["import", str(CPU_PROFILE), "--json", f"{p}/x.json", "-q"],
             (0,), lambda w: _write(w, "x.html", "old")),
        Case("escapes advise", ["advise", "-p", f"{p}/e.json", "-w", "small-cnn"], (0,),
             lambda w: _profile_with(w, "e.json", _escaped), escape_check=True),
        Case("escapes diff", ["diff", f"{p}/e.json", str(PROFILE)], (0,),
             lambda w: _profile_with(w, "e.json", _escaped), escape_check=True),
        Case("escapes import", ["import", f"{p}/e.json", "--out", f"{p}/o"], (0,),
             lambda w: _profile_with(w, "e.json", _escaped), escape_check=True),
        Case("redact report", ["report", f"{p}/s.json", "--out", f"{p}/o", "--format",
                               "json,html", "--redact"], (0,),
             lambda w: _profile_with(w, "s.json", _seeded), leak_check=True,
             env={"HWADVISOR_REDACT_SALT": "private"}),
        Case("redact diff", ["diff", f"{p}/s.json", f"{p}/s.json", "--redact", "--json", "-",
                             "--html", f"{p}/o/d.html"], (0,),
             lambda w: ((w / "o").mkdir(), _profile_with(w, "s.json", _seeded)), leak_check=True,
             env={"HWADVISOR_REDACT_SALT": "private"}),
        Case("redact import stdout", ["import", f"{p}/s.json", "--redact", "--json", "-"], (0,),
             lambda w: _profile_with(w, "s.json", _seeded), leak_check=True,
             env={"HWADVISOR_REDACT_SALT": "private"}),
        Case("host named td", ["report", f"{p}/td.json", "--out", f"{p}/o", "--format", "html",
                               "--redact"], (0,),
             lambda w: _profile_with(w, "td.json",
                                     lambda d: d["host"]["hostname"].update(value="td")),
             env={"HWADVISOR_REDACT_SALT": "private"}),
    ]  # fmt: skip
    return cases


def _descendants() -> set[int]:
    """Live processes whose parent chain leads to this one (Linux /proc)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").exists() else []:
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found = set()
    for pid in parents:
        seen, cur = set(), pid
        while cur in parents and cur not in seen:
            seen.add(cur)
            cur = parents[cur]
            if cur == me:
                found.add(pid)
                break
    return found


def _run(case: Case, work: Path) -> Outcome:
    if case.setup is not None:
        case.setup(work)
    args = [a.replace("{work}", str(work)) for a in case.args]
    env = {**os.environ, **case.env, "COLUMNS": "80"}
    env.setdefault("XDG_CONFIG_HOME", str(work / "config"))
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hwadvisor", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=work,
        start_new_session=True,
        preexec_fn=(lambda: os.close(1)) if case.stdin_closed_stdout else None,
    )
    problems: list[str] = []
    try:
        out_b, err_b = proc.communicate(timeout=LIMIT_S)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out_b, err_b = proc.communicate()
        code = None
        problems.append("hang")
    seconds = time.monotonic() - started
    out = out_b.decode("utf-8", "replace")
    err = err_b.decode("utf-8", "replace")
    if "Traceback" in err or "Traceback" in out:
        problems.append("traceback")
    if code == 1 or "internal error" in err:
        problems.append("internal error")
    if code is not None and code not in case.ok_codes:
        problems.append(f"exit {code}, expected {'/'.join(map(str, case.ok_codes))}")
    if code not in (0, None) and "error" in err and len(err.strip().splitlines()) > 1:
        problems.append("error message longer than one line")
    if (work / "PWNED").exists():
        problems.append("template ran code")
    written = "".join(
        f.read_text("utf-8", "replace")
        for f in work.rglob("*")
        if f.is_file() and ("o" in f.parts or f.name == "x.json")
    )
    if case.leak_check:
        shown = out + err + written
        leaked = [k for k, v in SECRETS.items() if v.lower() in shown.lower()]
        if leaked:
            problems.append(f"leak: {', '.join(leaked)}")
    if case.escape_check:
        for ch in ("\x1b", "\x07", "\u202e", "\x00"):
            if ch in out or ch in err or ch in written:
                problems.append(f"raw {ch!r} reached the output")
                break
    return Outcome(case, code, seconds, problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    outcomes: list[Outcome] = []
    for case in _cases():
        work = Path(tempfile.mkdtemp(prefix="hostile-"))
        try:
            outcomes.append(_run(case, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        last = outcomes[-1]
        if args.verbose or last.problems:
            status = "ok" if not last.problems else "; ".join(last.problems)
            print(f"{case.name:<26} exit {last.code!s:>4}  {last.seconds:5.1f} s  {status}")
    time.sleep(0.5)
    orphans = _descendants()
    counts = {
        "cases": len(outcomes),
        "OK": sum(1 for o in outcomes if not o.problems),
        "hangs": sum("hang" in o.problems for o in outcomes),
        "tracebacks": sum("traceback" in o.problems for o in outcomes),
        "internal errors": sum("internal error" in o.problems for o in outcomes),
        "leaks": sum(any(p.startswith("leak") for p in o.problems) for o in outcomes),
        "orphans": len(orphans),
    }
    print("  ".join(f"{k}: {v}" for k, v in counts.items()))
    bad = counts["cases"] - counts["OK"] + counts["orphans"]
    print("targets: 0 hangs, 0 tracebacks, 0 internal errors, 0 leaks, 0 orphans —",
          "PASS" if bad == 0 else "MISS")  # fmt: skip
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
