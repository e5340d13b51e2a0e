"""Turn what scripts/gpu-validate.sh brought back into the repository's records.

    python scripts/gpu-validate-apply.py OUTDIR

From OUTDIR (summary.txt, results.json, validation.tar.gz) it writes, for review and commit:
  tests/fixtures/nvidia-smi/validation-<gpu>-<date>.xml   the GPU's nvidia-smi -q -x, its
        supported-clock lists cut to three entries as the other recordings; SOURCES.md gets a row
  tests/fixtures/validation/<gpu>-<date>.json              the idle scan
  tests/fixtures/validation/<gpu>-<date>-busy.json         the scan beside the busy loop
  docs/validation.md                                       a row: device, driver, date, each check
        and figure
Nothing is overwritten: a file already there stops it before it writes anything (exit 2).
A run without a GPU has nothing to record (exit 0, says so). Exit 5: OUTDIR is not a result.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_CLOCK = re.compile(r"(\s*<supported_graphics_clock>[^<]*</supported_graphics_clock>\n)")
TRIM_NOTE = "<!-- hwadvisor fixture: the remaining supported_graphics_clock entries are trimmed -->"


def neutral_paths(text: str) -> str:
    """The scan's storage path is the GPU machine's copy of the repository: a recording keeps
    a neutral one instead (nothing of the machine the run came from)."""
    try:
        doc = json.loads(text)
        doc["storage"]["path"]["value"] = "/srv/hwadvisor/reports"
    except (ValueError, KeyError, TypeError):
        return text
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def slug(text: str) -> str:
    words = re.sub(r"^NVIDIA\s+", "", text.strip(), flags=re.IGNORECASE)
    return re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-") or "gpu"


def trim_clocks(xml: str) -> str:
    """Keep the first three ``supported_graphics_clock`` entries of each memory clock."""

    def cut(block: re.Match[str]) -> str:
        body = block.group(0)
        clocks = _CLOCK.findall(body)
        if len(clocks) <= 3:
            return body
        indent = re.match(r"\s*", clocks[0]).group(0).lstrip("\n")  # type: ignore[union-attr]
        kept = "".join(clocks[:3]) + f"{indent}{TRIM_NOTE}\n"
        start = body.index(clocks[0])
        end = body.index(clocks[-1]) + len(clocks[-1])
        return body[:start] + kept + body[end:]

    return re.sub(r"<supported_mem_clock>.*?</supported_mem_clock>", cut, xml, flags=re.DOTALL)


def read_result(outdir: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    record = json.loads((outdir / "results.json").read_text(encoding="utf-8"))
    if record.get("format") != "hwadvisor-gpu-validation/1":
        raise ValueError("results.json is not a GPU validation result")
    files: dict[str, bytes] = {}
    with tarfile.open(outdir / "validation.tar.gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.count("/") == 1:
                extracted = tar.extractfile(member)
                if extracted is not None:
                    files[member.name.split("/", 1)[1]] = extracted.read()
    return record, files


def gpu_name(record: dict[str, Any], files: dict[str, bytes]) -> str:
    xml = files.get("nvidia-smi.xml", b"").decode("utf-8", "replace")
    found = re.search(r"<product_name>([^<]+)</product_name>", xml)
    if found:
        count = len(re.findall(r"<gpu id=", xml))
        return f"{count}x {found.group(1).strip()}" if count > 1 else found.group(1).strip()
    return str(record.get("facts", {}).get("gpu", "GPU"))


def record_row(record: dict[str, Any], device: str, day: str) -> str:
    """The docs/validation.md row: every check and figure, one cell each."""
    facts = record.get("facts", {})
    cuda = re.search(r"CUDA (\S+)", facts.get("torch", ""))
    compared = []
    failed = 0
    for step in record["steps"]:
        for c in step["checks"]:
            if c["status"] in ("pass", "FAIL", "TIMEOUT"):
                failed += c["status"] != "pass"
                mark = "" if c["status"] == "pass" else f" **{c['status']}**"
                compared.append(f"{step['name']}: {c['name']}{mark}: {c['figure']}")
    statuses = ", ".join(f"{s['name']} {s['status']}" for s in record["steps"])
    what = "<br>".join(x.replace("|", "\\|") for x in compared)
    result = f"{'all checks passed' if not failed else f'{failed} checks failed'} ({statuses})"
    return (
        f"| {day} | {device} (`gpu-validate.sh`, {record['total_seconds']:.0f} s) | "
        f"{facts.get('driver', '?')} / {cuda.group(1) if cuda else '?'} | {what} | {result} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        record, files = read_result(args.outdir)
    except (OSError, ValueError, KeyError, tarfile.TarError) as exc:
        print(
            f"gpu-validate-apply: {args.outdir} is not a validation result: {exc}", file=sys.stderr
        )
        return 5
    if not record.get("has_gpu"):
        print(f"gpu-validate-apply: nothing to record: {record.get('gpu_reason', 'no GPU')}")
        return 0
    day = str(record.get("created_utc", ""))[:10] or dt.date.today().isoformat()
    device = gpu_name(record, files)
    name = f"{slug(device)}-{day}"
    root: Path = args.root
    plan: dict[Path, str] = {}
    if "nvidia-smi.xml" in files:
        xml = trim_clocks(files["nvidia-smi.xml"].decode("utf-8", "replace"))
        plan[root / "tests/fixtures/nvidia-smi" / f"validation-{name}.xml"] = xml
    for source, suffix in (("scan.json", ""), ("busy.json", "-busy")):
        if source in files:
            text = neutral_paths(files[source].decode("utf-8"))
            plan[root / "tests/fixtures/validation" / f"{name}{suffix}.json"] = text
    taken = [p for p in plan if p.exists()]
    if taken:
        listed = ", ".join(str(p.relative_to(root)) for p in taken)
        print(f"gpu-validate-apply: already recorded: {listed} (nothing written)", file=sys.stderr)
        return 2
    for path, text in plan.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(root)}")
    sources = root / "tests/fixtures/nvidia-smi/SOURCES.md"
    xml_name = f"validation-{name}.xml"
    if "nvidia-smi.xml" in files and sources.exists():
        with sources.open("a", encoding="utf-8") as f:
            f.write(
                f"| `{xml_name}` | {device} | {record.get('facts', {}).get('driver', '?')} | "
                f"recorded by `scripts/gpu-validate.sh` on a lent machine, {day} | this project |\n"
            )
        print(f"added {xml_name} to {sources.relative_to(root)}")
    doc = root / "docs/validation.md"
    with doc.open("a", encoding="utf-8") as f:
        f.write(record_row(record, device, day) + "\n")
    print(f"added a row to {doc.relative_to(root)}: review with `git diff`, then commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
