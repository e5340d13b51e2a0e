"""The shape of a language model, as inference sizing needs it: what its weights and its KV
cache weigh, and how many parameters each token reads.

Filled from the shipped model catalog (``catalog/llms.toml``), a Hugging Face ``config.json``, or
the header of a GGUF or safetensors file; never from the weights themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LlmGeometry:
    """One model's architecture. Counts are plain numbers; sizes in the names' units."""

    name: str
    """The catalog name (``llama-3.1-8b``) or, for a file, its stem."""
    params_total: float
    """Every parameter, embeddings included (MoE: every expert)."""
    params_active: float
    """Parameters one token reads: all of a dense model; a MoE's shared part and active experts."""
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int | None = None
    experts: int = 0
    """Routed experts per MoE layer (0: a dense model)."""
    experts_active: int = 0
    """Routed experts each token uses."""
    sliding_window: int | None = None
    """Tokens a sliding-window layer attends to (Gemma 2/3, Mistral 7B v0.1, gpt-oss)."""
    sliding_layers: int = 0
    """How many of ``layers`` use the sliding window (their KV cache stops growing there)."""
    kv_lora_rank: int | None = None
    """Multi-head latent attention (DeepSeek V2/V3/R1): the compressed KV width per layer."""
    rope_head_dim: int | None = None
    """MLA: the decoupled rotary key width stored beside the compressed KV."""
    max_context: int | None = None
    native_quant: str | None = None
    """The format the weights are released in where it is not 16-bit (gpt-oss: MXFP4,
    DeepSeek V3/R1: fp8): what an engine that runs it serves when no quantization is named."""
    tied_embeddings: bool = False
    """The output head is the input embedding (Llama 3.2 1B/3B, small Qwen, Gemma): one
    vocab x hidden matrix in the weights, not two."""
    hf_id: str | None = None
    aliases: tuple[str, ...] = field(default_factory=tuple)
    source: str = ""
    """Where the numbers come from (the config's address, or the file read)."""

    def __hash__(self) -> int:
        # Equal shapes share these three; hashing every field cost each of the caches keyed by
        # a shape (weights, tensor widths, a step's reads) more than its lookup.
        return hash((self.name, self.params_total, self.layers))

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def kv_values_per_token(self, context: int) -> float:
        """KV-cache values stored for one token, averaged over a context of ``context`` tokens
        (sliding-window layers keep at most their window), across every layer."""
        if self.kv_lora_rank is not None:
            per_layer = float(self.kv_lora_rank + (self.rope_head_dim or 0))
        else:
            per_layer = 2.0 * self.kv_heads * self.head_dim
        full = self.layers - self.sliding_layers
        values = full * per_layer
        if self.sliding_layers and context > 0:
            window = self.sliding_window or context
            values += self.sliding_layers * per_layer * min(1.0, window / context)
        return values

    def kv_bytes(self, context: int, bytes_per_value: float, sequences: int = 1) -> float:
        """The KV cache of ``sequences`` sequences of ``context`` tokens each."""
        return self.kv_values_per_token(context) * context * bytes_per_value * sequences
