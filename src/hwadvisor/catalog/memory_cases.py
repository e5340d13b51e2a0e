"""``memory_cases.toml`` and memory specs given as tables, read through the one loader.

The models of a ``[[case]]``, its ``[case.spec]`` and ``[case.spec.transformer]``. Their fields
refuse unknown keys and wrong types; :class:`~hwadvisor.memory.MemorySpec` and
:class:`~hwadvisor.memory.TransformerShape`, built by the validators, add their bounds and
cross-field rules. Imported by :func:`hwadvisor.memory.spec_from_mapping` and
:func:`hwadvisor.memory.load_memory_cases` when a file or table is read, so that the advice,
which imports :mod:`hwadvisor.memory` but reads no cases, does not build these models.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PrivateAttr, model_validator

from hwadvisor.catalog.schema import (
    FLAG,
    DataModel,
    OptFraction,
    OptNonNegative,
    OptPositive,
    OptPositiveWhole,
    OptText,
    Positive,
    PositiveWhole,
    Text,
    choice,
    distinct_entries,
    load_table,
    load_toml,
)
from hwadvisor.catalog.toml import TomlSource
from hwadvisor.memory import (
    _LORA_MODULES,
    BASE_WEIGHT_BITS,
    EXPECTATIONS,
    GIB,
    MAX_DEVICE_BYTES,
    MIB,
    OPTIMIZERS,
    PRECISIONS,
    STRATEGIES,
    MemoryCase,
    MemoryModelError,
    MemorySpec,
    TransformerShape,
    lora_trainable_parameters,
)

__all__ = ["parse_cases", "read_spec"]

_OptFlag = Annotated[bool | None, FLAG]


class _Shape(DataModel):
    """``transformer``: a :class:`~hwadvisor.memory.TransformerShape`."""

    layers: PositiveWhole
    hidden: PositiveWhole
    heads: PositiveWhole
    sequence_length: PositiveWhole
    vocab_size: OptPositiveWhole = None
    flash_attention: _OptFlag = None
    _shape: TransformerShape = PrivateAttr()

    @model_validator(mode="after")
    def _build(self) -> _Shape:
        self._shape = TransformerShape(**self.model_dump(exclude_unset=True))
        return self


class _Spec(DataModel):
    """A :class:`~hwadvisor.memory.MemorySpec` as a table (its defaults where a key is left
    out), or LoRA adapters computed from the shape: ``lora_rank`` with ``lora_modules`` (and
    ``intermediate_size`` for "all"), added to ``parameters`` (then the base model's)."""

    parameters: Positive
    trainable_parameters: OptPositive = None
    precision: Annotated[str | None, choice(*PRECISIONS)] = None
    master_weights: _OptFlag = None
    base_weight_bits: Annotated[int | None, choice(*BASE_WEIGHT_BITS)] = None
    double_quant: _OptFlag = None
    unquantized_parameters: OptNonNegative = None
    optimizer: Annotated[str | None, choice(*OPTIMIZERS)] = None
    paged_optimizer: _OptFlag = None
    transformer: _Shape | None = None
    activation_bytes_per_sample: OptNonNegative = None
    activation_layers: OptPositiveWhole = None
    gradient_checkpointing: _OptFlag = None
    allow_checkpointing: _OptFlag = None
    batch_size: OptPositiveWhole = None
    gpus: OptPositiveWhole = None
    strategy: Annotated[str | None, choice(*STRATEGIES)] = None
    overhead_bytes: OptNonNegative = None
    usable_fraction: OptFraction = None
    lora_rank: OptPositiveWhole = None
    lora_modules: Annotated[str | None, choice(*_LORA_MODULES)] = None
    intermediate_size: OptPositiveWhole = None
    _spec: MemorySpec = PrivateAttr()

    @model_validator(mode="after")
    def _build(self) -> _Spec:
        lora = {"lora_rank", "lora_modules", "intermediate_size"}
        values = self.model_dump(exclude_unset=True, exclude={"transformer", *lora})
        shape = None if self.transformer is None else self.transformer._shape
        values["transformer"] = shape
        if self.lora_rank is None:
            if self.lora_modules is not None or self.intermediate_size is not None:
                raise MemoryModelError("lora_modules and intermediate_size go with lora_rank")
        else:
            if shape is None:
                raise MemoryModelError("lora_rank needs a transformer shape")
            if self.trainable_parameters is not None:
                raise MemoryModelError("give lora_rank or trainable_parameters, not both")
            adapters = lora_trainable_parameters(
                shape.layers,
                shape.hidden,
                self.lora_rank,
                self.lora_modules or "qv",
                self.intermediate_size,
            )
            # ``parameters`` is then the base model; the adapters come on top of it.
            values["parameters"] = self.parameters + adapters
            values["trainable_parameters"] = adapters
        self._spec = MemorySpec(**values)
        return self


class _Case(DataModel):
    """One ``[[case]]``."""

    id: Text
    claim: Text
    source: Text
    expect: Annotated[str, choice(*EXPECTATIONS)]
    device_gib: OptPositive = None
    device_mib: OptPositive = None
    notes: OptText = None
    known_disagreement: OptText = None
    spec: _Spec

    @model_validator(mode="after")
    def _one_size(self) -> _Case:
        if (self.device_gib is None) == (self.device_mib is None):
            raise MemoryModelError("give device_gib or device_mib, one of them")
        if self.device_bytes > MAX_DEVICE_BYTES:
            raise MemoryModelError(f"a device of {self.device_bytes:.3g} bytes: surely a typo")
        return self

    @property
    def device_bytes(self) -> float:
        return (
            self.device_gib * GIB if self.device_gib is not None else (self.device_mib or 0) * MIB
        )

    def case(self) -> MemoryCase:
        return MemoryCase(
            id=self.id,
            claim=self.claim,
            source=self.source,
            expect=self.expect,
            device_bytes=self.device_bytes,
            spec=self.spec._spec,
            known_disagreement=self.known_disagreement or "",
            notes=self.notes or "",
        )


class _CasesFile(DataModel):
    case: list[_Case] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cases(self) -> _CasesFile:
        distinct_entries(self.case, "case", lambda c: c.id, "case")
        return self


def read_spec(data: object, where: str) -> MemorySpec:
    """A :class:`~hwadvisor.memory.MemorySpec` from a table; :class:`MemoryModelError`."""
    return load_table(_Spec, data, where, MemoryModelError)._spec


def parse_cases(text: TomlSource, origin: str) -> list[MemoryCase]:
    """The cases of a ``memory_cases.toml`` text, in file order; :class:`MemoryModelError`."""
    return [c.case() for c in load_toml(_CasesFile, text, origin, MemoryModelError).case]
