#!/usr/bin/env bash
# Set up hwadvisor in ./.venv (or $HWADVISOR_VENV). Safe to run again.
#
#   bash setup.sh          the tool, with HTML/PDF reports and `hwadvisor fleet`
#   bash setup.sh --dev    the tool and what the tests, lint and type checks need
#   bash setup.sh --slim   JSON and HTML (an inventory host): no WeasyPrint or DuckDB
#
# PyTorch is chosen with care: a torch you already have (for example a CUDA or ROCm build in the
# Python this script runs with) is kept; on a machine with an NVIDIA GPU the default build is
# installed; on a CPU-only machine only a CPU build is installed (a local wheel of
# torch==$HWADVISOR_TORCH_VERSION, or the platform's default where that is CPU-only), never the
# multi-GB CUDA build. Without torch hwadvisor still runs and says what is missing.
set -euo pipefail

cd "$(dirname "$0")"
DEV=0
SLIM=0
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    --slim) SLIM=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $arg (use --dev, --slim or --help)" >&2; exit 2 ;;
  esac
done

PYTHON="${PYTHON:-python3}"
VENV="${HWADVISOR_VENV:-.venv}"
TORCH_VERSION="${HWADVISOR_TORCH_VERSION:-2.13.0}"
say() { printf 'setup: %s\n' "$*" >&2; }

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  say "no $PYTHON found: install Python 3.10 or newer (Debian/Ubuntu: apt-get install python3 python3-venv)"
  exit 1
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  say "$("$PYTHON" -V 2>&1) is too old: hwadvisor needs Python 3.10 or newer"
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  # System site-packages stay visible, so a torch the user already installed is used as it is.
  if ! "$PYTHON" -m venv --system-site-packages "$VENV" 2>/dev/null; then
    say "could not create a virtual environment: install the venv module (Debian/Ubuntu: apt-get install python3-venv)"
    exit 1
  fi
fi
PY="$VENV/bin/python"
pip_install() { "$PY" -m pip install --quiet --disable-pip-version-check "$@"; }

if "$PY" -c 'import torch' >/dev/null 2>&1; then
  say "keeping the installed $("$PY" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null)"
elif [ -e /dev/nvidiactl ] || command -v nvidia-smi >/dev/null 2>&1; then
  say "NVIDIA GPU found: installing the default (CUDA) build of torch"
  pip_install torch
elif pip_install --no-index --no-deps "torch==$TORCH_VERSION" >/dev/null 2>&1; then
  pip_install "torch==$TORCH_VERSION"   # its dependencies; torch itself is already the local CPU wheel
  say "installed the local CPU build of torch $TORCH_VERSION"
elif [ "$(uname -s)" = "Darwin" ] || [ "$(uname -m)" != "x86_64" ]; then
  pip_install torch   # the default builds for macOS and Linux on Arm are CPU (or MPS) builds
else
  say "no GPU and no local CPU wheel of torch: skipping torch rather than pulling the multi-GB CUDA build."
  say "hwadvisor runs without it; to add it, install a CPU build of torch into $VENV (PyTorch's 'Get started' selector gives the command)."
fi

# PDF reports need Pango (WeasyPrint). Debian/Ubuntu as root: install it; otherwise say how.
# Without it hwadvisor still writes JSON and HTML.
if [ "$SLIM" = 0 ] && [ "$(uname -s)" = "Linux" ] && ! ldconfig -p 2>/dev/null | grep -q 'libpango-1.0.so'; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Pango for PDF reports (apt-get install libpango-1.0-0 libpangoft2-1.0-0)"
    apt-get install -y -qq libpango-1.0-0 libpangoft2-1.0-0 >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq libpango-1.0-0 libpangoft2-1.0-0 >/dev/null 2>&1; } \
      || say "could not install Pango: PDF reports will be skipped (JSON and HTML still work)"
  else
    say "Pango is missing: PDF reports will be skipped until you install it (Debian/Ubuntu: sudo apt-get install libpango-1.0-0 libpangoft2-1.0-0; Fedora: sudo dnf install pango)"
  fi
fi

if [ "$DEV" = 1 ]; then
  pip_install -e ".[report,fleet,dev]"
elif [ "$SLIM" = 1 ]; then
  pip_install -e .
else
  pip_install -e ".[report,fleet]"
fi
say "ready: $VENV/bin/hwadvisor $("$VENV/bin/hwadvisor" --version | cut -d' ' -f2)"
