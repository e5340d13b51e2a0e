"""The ``inference`` answer: will a model run on a machine, how fast, for how many users, and
what to buy or rent to serve it. Built once by the advice (``advise/serving.py``) and printed by
the terminal and JSON outputs; names of the estimate fields are part of the JSON contract."""

from __future__ import annotations

from pydantic import Field

from hwadvisor.model.facts import StrictModel


class ServeMemoryBreakdown(StrictModel):
    weights_bytes: int
    kv_bytes: int
    buffers_bytes: int
    runtime_bytes: int
    total_bytes: int
    usable_bytes: int
    headroom_bytes: int
    max_context_that_fits: int | None = None
    usable_note: str | None = None


class InferenceEstimate(StrictModel):
    """One piece of hardware serving the model."""

    hardware: str
    origin: str
    """``this machine`` (measured where the scan measured), ``assumed`` or ``catalog``."""
    scenario_class: int
    """1 a CPU, 2 one GPU, 3 one machine of 2-8 GPUs, 4 several machines."""
    gpus: int = 0
    fits_memory: bool
    memory_needed_bytes: int
    memory_available_bytes: int
    memory: ServeMemoryBreakdown
    decode_tok_s: float | None = None
    decode_low_tok_s: float | None = None
    decode_high_tok_s: float | None = None
    decode_full_context_tok_s: float | None = None
    """One user's decode with the whole context in the KV cache (``decode_tok_s`` is at the
    middle of a reply: the prompt and half the reply)."""
    prefill_tok_s: float | None = None
    time_to_first_token_s: float | None = None
    throughput_tok_s: float | None = None
    """Every user's tokens together, at ``users`` at once."""
    per_user_tok_s: float | None = None
    users_at_target: int | None = None
    meets_target: bool = False
    measured: bool = False
    """Speed from this machine's measured bandwidth and FLOPs (else catalog peaks)."""
    basis: str = ""
    purchase_cost: float | None = None
    hourly_cost: float | None = None
    rent_as: str | None = None
    rented_stand_in: bool = False
    """``rent_as`` is another GPU, as fast: no cloud rents this one."""
    rented_gpus: int | None = None
    """The GPUs ``rent_as`` holds: more than ``gpus`` where the smallest instance of that GPU
    on offer is larger (``hourly_cost`` is that whole instance's)."""
    bought_gpus: int | None = None
    """The GPUs ``purchase_cost`` buys: more than ``gpus`` where the GPU is sold only so many
    at a time (an OAM module on its 8-GPU baseboard); None for a whole computer (a Mac) or no
    purchase price."""
    bought_whole: bool = False
    """``purchase_cost`` is a whole computer's (a Mac), not cards with a host around them."""
    cost_per_million_tokens_rented: float | None = None
    cost_per_million_tokens_owned: float | None = None
    """Electricity only, at the price per kWh used."""
    price_date: str | None = None
    price_source: str | None = None
    suggestions: list[str] = Field(default_factory=list)


class InferenceAdvice(StrictModel):
    model: str
    model_source: str
    params_total: float
    params_active: float
    quant: str
    bits_per_weight: float
    context: int
    engine: str
    users: int
    target_tok_s: float
    max_ttft_s: float = 10.0
    """The longest wait for a reply's first token that still serves a user (seconds)."""
    prompt_tokens: int
    reply_tokens: int = 256
    """The reply length each estimate's ``throughput_tok_s`` is counted at: replies' tokens
    per second, each request's prompt computed too."""
    kv_cache: str
    decode_depth_tokens: int | None = None
    """The KV depth each estimate's ``decode_tok_s`` is timed at: a reply's middle (its prompt
    and half the reply), never past the context."""
    scenario_class: int | None = None
    """The smallest class with an option that holds the model and meets the target."""
    this_machine: InferenceEstimate | None = None
    this_machine_note: str | None = None
    """Why ``this_machine`` is null: no profile was read, or it has no trusted bandwidth."""
    recommendation: InferenceEstimate | None = None
    """The cheapest option of the scenario's class to buy (the rental where none has a price)."""
    cheapest_to_rent: InferenceEstimate | None = None
    """The option that serves it at the lowest hourly price, of any class (one rents by the
    hour; a stand-in rental of a GPU no cloud offers is not one)."""
    estimates: list[InferenceEstimate] = Field(default_factory=list)
    currency: str | None = None
    kwh_price: float | None = None
    caveats: list[str] = Field(default_factory=list)
