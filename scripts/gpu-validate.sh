#!/usr/bin/env bash
# Validate hwadvisor's GPU paths on a real NVIDIA GPU in one call; on a machine without one,
# run every step that needs none and say so. Results: at most 8 files in OUTDIR (new or empty):
# summary.txt first, results.json, validation.tar.gz, page1.png.
#
#   bash scripts/gpu-validate.sh OUTDIR
#
# Installs offline from .gpu-kit/ (filled here by scripts/gpu-kit-prepare.sh); without a kit it
# uses the hwadvisor that python3 or ./.venv already has. docs/validation.md: how to run it on a
# borrowed GPU machine, and scripts/gpu-validate-apply.py for what comes back.
# Exit: 0 all checks passed or skipped, 1 a check failed, 2 bad usage, 130/143 interrupted.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${HWADVISOR_VALIDATE_PYTHON:-python3}"
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "gpu-validate: no $PY here: it needs Python 3.10 or newer" >&2
  exit 2
fi
exec "$PY" scripts/gpu_validate.py "$@"
