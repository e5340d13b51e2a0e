"""The profile's schema version, in a module of its own: commands that only write it (an
``advise --serve`` answer) need not load the profile's models."""

#: Bumped when the JSON changes shape. Loaders accept every version up to this one.
#: 1: detection. 2: adds ``benchmarks``. 3: adds ``advice``. 4: adds the benchmarks' load
#: conditions, per-measurement disturbances and threads, and the benchmark devices' identity.
#: 5: adds ``imported`` (what an imported profile was read from), the GPUs' ``catalog_name`` and
#: ``gpu_class``, and the import formats' fact sources. 6: adds ``system`` (DMI vendor, product,
#: serial, BIOS), ``network`` (NICs, InfiniBand/RoCE ports) and the GPUs' health facts (VBIOS,
#: ECC error counts, retired pages, remapped rows, recent Xid errors). 7: the advice as one
#: answer: ``deadline_hours``, the ``recommendation`` with its costs, ``class_below``,
#: ``if_you_can_wait``, ``assumed`` verdicts, ``key_figures``, ``caveats``, the verdict's words
#: (``this_machine.verdict``, ``checks``), each estimate's ``scenario_class`` and costs.
#: 8: ``host.labels`` (``scan --label``).
SCHEMA_VERSION = 8
