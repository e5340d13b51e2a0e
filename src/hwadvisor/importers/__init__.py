"""Importers: turn text recorded elsewhere (``nvidia-smi -q -x``, collect_env) into facts."""
