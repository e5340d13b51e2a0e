"""``llms.toml``: the shapes of the open language models people run, looked up by name.

A model is found by its catalog name (``llama-3.1-8b``), an alias (``llama3.1:8b`` as Ollama
spells it, ``Meta-Llama-3-8B``) or its Hugging Face id (``meta-llama/Llama-3.1-8B``), in any
case, and with ``-``, ``_``, ``.``, ``:``, ``/`` and spaces ignored where that leaves one model;
an ``-Instruct``/``-it``/``-chat`` suffix is dropped when nothing matches with it (the tuned
model has the base model's shape).

:func:`count_params` is the one parameter count from a shape; the catalog's own counts are the
model cards' published ones, and a test checks each against this count (it catches typos).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Annotated, Any

from pydantic import Field, model_validator

from hwadvisor.catalog import schema
from hwadvisor.catalog.llm_geometry import LlmGeometry
from hwadvisor.catalog.peaks import CatalogError
from hwadvisor.catalog.schema import (
    DataModel,
    Flag,
    OptPositiveWhole,
    OptText,
    Positive,
    PositiveWhole,
    Text,
    Whole,
    distinct_entries,
    load_toml,
)
from hwadvisor.catalog.toml import TomlSource, packaged_kept
from hwadvisor.errors import UsageError

__all__ = [
    "LLMS_RESOURCE",
    "LlmShape",
    "all_llms",
    "count_params",
    "find_llm",
    "llm_names",
    "llm_shape",
    "lookup_key",
    "parse_llms",
]

LLMS_RESOURCE = "llms.toml"

#: Suffixes of a tuned model's name that do not change its shape, with a release's date tag
#: after them (``-Instruct-2507``, ``-0528``).
_TUNED = re.compile(r"(?:(?:instruct|it|pt|chat|base|hf)(?:\d{4})?|\d{4})$")


@dataclass(frozen=True)
class LlmShape:
    """What a parameter count needs beyond :class:`LlmGeometry` (not part of the geometry that
    memory and speed models read)."""

    tied_embeddings: bool = False
    """The output projection reuses the input embedding (one ``vocab × hidden`` matrix)."""
    shared_experts: int = 0
    """MoE: experts every token uses besides the routed ones (DeepSeek V3: 1)."""
    dense_layers: int = 0
    """MoE: the first layers that have a dense MLP instead of experts (DeepSeek V3: 3)."""
    dense_intermediate: int | None = None
    """The dense layers' MLP width (``intermediate`` is then the expert's width)."""
    q_lora_rank: int | None = None
    """MLA: the compressed query width (None: queries projected directly)."""
    v_head_dim: int | None = None
    """MLA: the value head width (None: ``head_dim``)."""
    mlp_matrices: int = 3
    """The MLP's matrices: 3 for a gated MLP (gate, up, down), 2 for an ungated one (GPT-J)."""


def count_params(g: LlmGeometry, shape: LlmShape = LlmShape()) -> tuple[float, float]:
    """(total, active) parameters of a decoder-only transformer of this shape: embeddings (twice
    when untied), then per layer attention (q, k, v, o; MLA's compressed projections) and a gated
    MLP (3 matrices; 2 ungated) or experts (routed + shared, with the router). Norms and biases
    are left out (well under 0.1 %)."""
    h = g.hidden
    if g.kv_lora_rank is not None:
        rope = g.rope_head_dim or 0
        v_dim = shape.v_head_dim or g.head_dim
        q_width = g.heads * (g.head_dim + rope)
        q = (
            h * shape.q_lora_rank + shape.q_lora_rank * q_width
            if shape.q_lora_rank
            else h * q_width
        )
        kv = h * (g.kv_lora_rank + rope) + g.kv_lora_rank * g.heads * (g.head_dim + v_dim)
        attention = float(q + kv + g.heads * v_dim * h)
    else:
        attention = float(h * g.head_dim * (2 * g.heads + 2 * g.kv_heads))
    mlp = float(shape.mlp_matrices) * h * (g.intermediate or 0)
    embeddings = float(g.vocab * h * (1 if shape.tied_embeddings else 2))
    if not g.moe:
        total = embeddings + g.layers * (attention + mlp)
        return total, total
    dense = shape.dense_layers
    dense_mlp = float(shape.mlp_matrices) * h * (shape.dense_intermediate or g.intermediate or 0)
    moe_layers = g.layers - dense
    routed = moe_layers * (g.experts * mlp + h * g.experts)
    shared = moe_layers * shape.shared_experts * mlp
    common = embeddings + g.layers * attention + dense * dense_mlp + shared
    total = common + routed
    active = common + moe_layers * (g.experts_active * mlp + h * g.experts)
    return total, active


# --------------------------------------------------------------------------------------------
# The file


class _Llm(DataModel):
    name: Text
    hf_id: Text
    source: Text
    params_total: Positive
    params_active: Positive
    layers: PositiveWhole
    hidden: PositiveWhole
    heads: PositiveWhole
    kv_heads: PositiveWhole
    head_dim: PositiveWhole
    vocab: PositiveWhole
    intermediate: PositiveWhole
    max_context: PositiveWhole
    native_quant: OptText = None
    aliases: list[Text] = Field(default_factory=list)
    experts: Whole = 0
    experts_active: Whole = 0
    sliding_window: OptPositiveWhole = None
    sliding_layers: Whole = 0
    kv_lora_rank: OptPositiveWhole = None
    rope_head_dim: OptPositiveWhole = None
    tied_embeddings: Flag = False
    shared_experts: Whole = 0
    dense_layers: Whole = 0
    dense_intermediate: OptPositiveWhole = None
    q_lora_rank: OptPositiveWhole = None
    v_head_dim: OptPositiveWhole = None
    mlp_matrices: Annotated[int, Field(ge=2, le=3)] = 3

    @model_validator(mode="after")
    def _consistent(self) -> _Llm:
        if not self.source.startswith("https://"):
            raise ValueError(f"source must be an https address, got {self.source!r}")
        if self.params_active > self.params_total:
            raise ValueError("params_active is more than params_total")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) is not a multiple of kv_heads")
        if bool(self.experts) != bool(self.experts_active) or self.experts_active > self.experts:
            raise ValueError("experts and experts_active go together, active <= experts")
        if self.experts and self.params_active >= self.params_total:
            raise ValueError("a MoE model reads fewer parameters than it has")
        if not self.experts and self.params_active != self.params_total:
            raise ValueError("a dense model's params_active is its params_total")
        if self.sliding_layers > self.layers:
            raise ValueError("sliding_layers is more than layers")
        if bool(self.sliding_layers) != (self.sliding_window is not None):
            raise ValueError("sliding_window and sliding_layers go together")
        if (self.kv_lora_rank is None) != (self.rope_head_dim is None):
            raise ValueError("kv_lora_rank and rope_head_dim go together (latent attention)")
        if self.dense_layers >= self.layers:
            raise ValueError("dense_layers must leave some MoE layers")
        return self


class _Llms(DataModel):
    llm: list[_Llm]

    @model_validator(mode="after")
    def _distinct(self) -> _Llms:
        distinct_entries(self.llm, "llm", lambda row: row.name, "model name")
        return self


@dataclass(frozen=True)
class _Catalog:
    models: tuple[LlmGeometry, ...]
    shapes: dict[str, LlmShape]
    exact: dict[str, str]
    """casefolded name / alias / HF id → catalog name"""
    loose: dict[str, str | None]
    """separator-free key → catalog name (None: more than one model has that key)"""


def lookup_key(name: str) -> str:
    """A name with case and separators (``-_.:/`` and spaces) ignored."""
    return re.sub(r"[-_.:/\s]+", "", name.casefold())


_SHAPE_KEYS = tuple(f.name for f in fields(LlmShape))


def parse_llms(text: TomlSource, origin: str = LLMS_RESOURCE) -> _Catalog:
    """The catalog in ``text``; :class:`CatalogError` naming the row for a bad one."""
    return _build(_rows(text, origin), origin)


def _rows(text: TomlSource, origin: str = LLMS_RESOURCE) -> list[dict[str, Any]]:
    """The catalog's rows validated, as plain values."""
    return [row.model_dump() for row in load_toml(_Llms, text, origin, CatalogError).llm]


def _build(rows: list[dict[str, Any]], origin: str) -> _Catalog:
    models: list[LlmGeometry] = []
    shapes: dict[str, LlmShape] = {}
    exact: dict[str, str] = {}
    loose: dict[str, str | None] = {}
    for index, row in enumerate(rows, start=1):
        values = dict(row)
        shape = LlmShape(**{key: values.pop(key) for key in _SHAPE_KEYS})
        values["aliases"] = tuple(values["aliases"])
        geometry = LlmGeometry(**values, tied_embeddings=shape.tied_embeddings)
        name: str = row["name"]
        hf_id: str = row["hf_id"]
        names = [name, hf_id, hf_id.rsplit("/", 1)[-1], *geometry.aliases]
        for alias in names:
            owner = exact.setdefault(alias.casefold(), name)
            if owner != name:
                raise CatalogError(
                    f"{origin}: [[llm]] entry {index} ({name!r}): name or alias {alias!r} "
                    f"is already {owner!r}'s"
                )
            key = lookup_key(alias)
            loose[key] = name if loose.get(key, name) == name else None
        models.append(geometry)
        shapes[name] = shape
    return _Catalog(tuple(models), shapes, exact, loose)


#: What the kept rows depend on besides the TOML: this module's model and the field checks.
_CODE = (__file__, schema.__file__)


@lru_cache(maxsize=1)
def _catalog() -> _Catalog:
    return _read_catalog()


def _read_catalog() -> _Catalog:
    return packaged_kept(
        LLMS_RESOURCE, CatalogError, _rows, lambda rows: _build(rows, LLMS_RESOURCE), _CODE
    )


def all_llms() -> list[LlmGeometry]:
    """Every catalog model, in file order."""
    return list(_catalog().models)


def llm_names() -> list[str]:
    """Every catalog name, in file order."""
    return [m.name for m in _catalog().models]


def llm_shape(name: str) -> LlmShape:
    """The parameter-count extras of the catalog model ``name`` (its catalog name)."""
    return _catalog().shapes[name]


def find_llm(name: str) -> LlmGeometry:
    """The catalog model called ``name`` (name, alias or HF id; see the module's docstring);
    :class:`UsageError` naming the nearest names when none is."""
    catalog = _catalog()
    wanted = name.strip()
    found = catalog.exact.get(wanted.casefold())
    if found is None:
        key = lookup_key(wanted)
        found = catalog.loose.get(key)
        if found is None and key not in catalog.loose:
            # a repository's id under another owner (``unsloth/Qwen3-8B``), a tuned model's
            # (``google/gemma-3-12b-it``): the base model's shape
            for bare in (key, lookup_key(wanted.rsplit("/", 1)[-1])):
                for candidate in dict.fromkeys((bare, _TUNED.sub("", bare))):
                    found = catalog.loose.get(candidate)
                    if found:
                        break
                if found:
                    break
    if found is None:
        raise UsageError(_unknown(wanted, catalog))
    return next(m for m in catalog.models if m.name == found)


def _unknown(wanted: str, catalog: _Catalog) -> str:
    key = lookup_key(wanted)
    if catalog.loose.get(key, "") is None:
        owners = sorted({m.name for m in catalog.models if key in _keys(m)})
        return f"model {wanted!r} could be {', '.join(owners)}: give the full name"
    by_key = {lookup_key(n): n for n in llm_names()}
    near = difflib.get_close_matches(key, list(by_key), n=3, cutoff=0.0)
    shown = ", ".join(by_key[k] for k in near)
    return (
        f"model {wanted!r} is not in the model catalog; nearest: {shown} "
        "(or give a config.json, GGUF or safetensors file)"
    )


def _keys(m: LlmGeometry) -> set[str]:
    names = [m.name, *(m.aliases), *([m.hf_id, m.hf_id.rsplit("/", 1)[-1]] if m.hf_id else [])]
    return {lookup_key(n) for n in names}
