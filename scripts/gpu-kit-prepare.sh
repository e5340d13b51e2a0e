#!/usr/bin/env bash
# Fill .gpu-kit/ (git-ignored) with what scripts/gpu-validate.sh installs, offline, on a GPU
# machine that has no network: a wheel of hwadvisor built from this tree, and the wheels of
# everything it needs for CPython 3.12 on manylinux x86-64 (pydantic and its dependencies,
# WeasyPrint and its own, setuptools to rebuild hwadvisor there if the tree has changed since).
# Then, where a python3.12 is found, checks an offline install into a fresh venv: `hwadvisor
# --help` must run.
#
#   bash scripts/gpu-kit-prepare.sh [--python-version 3.12] [--no-check]
#
# Needs the package index (this machine, not the GPU machine). The kit replaces the old one only
# once it is complete.
set -euo pipefail
cd "$(dirname "$0")/.."
KIT="${HWADVISOR_GPU_KIT:-.gpu-kit}"
PYV=3.12
CHECK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --python-version) PYV="$2"; shift 2 ;;
    --no-check) CHECK=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "gpu-kit-prepare: unknown option $1 (use --python-version X.Y, --no-check)" >&2; exit 2 ;;
  esac
done
say() { printf 'gpu-kit-prepare: %s\n' "$*" >&2; }
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
quiet() { grep -v -e "is ignored: it is neither a file nor a directory" -e '^$' || true; }

NEW="$KIT.new"
rm -rf "$NEW"
mkdir -p "$NEW/wheels"
say "building hwadvisor's wheel from this tree"
"$PY" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$NEW/wheels" . 2>&1 | quiet
WHEEL="$(ls "$NEW"/wheels/hwadvisor-*.whl)"

ABI="cp${PYV/./}"
platforms=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
for n in 5 12 17 24 26 27 28 31 34 35 39; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
say "downloading its dependencies for CPython $PYV, manylinux x86-64"
"$PY" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
  --python-version "$PYV" --implementation cp --abi "$ABI" --abi abi3 --abi none "${platforms[@]}" \
  -d "$NEW/wheels" "$WHEEL[report]" "setuptools>=77" 2>&1 | quiet

commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
tree="$("$PY" scripts/gpu_validate.py --tree-hash)"
cat > "$NEW/MANIFEST.json" <<JSON
{
 "python": "$PYV",
 "commit": "$commit",
 "tree": "$tree",
 "created_utc": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "wheels": $(ls "$NEW/wheels" | "$PY" -c 'import json,sys; print(json.dumps(sys.stdin.read().split()))')
}
JSON

if [ "$CHECK" = 1 ]; then
  CHECKPY=""
  for candidate in "python$PYV" "$(pyenv root 2>/dev/null)/versions/$PYV"*/bin/python; do
    if "$candidate" -c '' >/dev/null 2>&1; then CHECKPY="$candidate"; break; fi
  done
  if [ -z "$CHECKPY" ]; then
    say "no python$PYV here: the offline install was not checked"
  else
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    "$CHECKPY" -m venv "$tmp/venv"
    "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
      --find-links "$NEW/wheels" "hwadvisor[report]" 2>&1 | quiet
    "$tmp/venv/bin/hwadvisor" --help >/dev/null
    say "checked: an offline install into a fresh Python $PYV venv runs 'hwadvisor --help'"
  fi
fi

rm -rf "$KIT"
mv "$NEW" "$KIT"
size="$(du -sh "$KIT" | cut -f1)"
say "ready: $KIT ($(ls "$KIT/wheels" | wc -l) wheels, $size, tree $tree)"
say "on the GPU machine: bash scripts/gpu-validate.sh OUTDIR (carry $KIT)"
