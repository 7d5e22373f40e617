"""FSDP scenario configuration: keyword-only dataclasses that validate themselves (pure: no torch).

A configuration is ``config/default.yaml`` (or ``--aorta-config FILE``), then ``config/smoke.yaml`` on top
when the run is at smoke size, then every ``--aorta-override key.path=value`` in the order given. Each value is
read with ``yaml.safe_load`` (``training.steps=20`` is an int, ``compile.enabled=false`` a bool). The file
is checked on its own before anything is merged on top of it. An unknown key, a value of the wrong type or
a value out of range is a ``ConfigError`` naming the key, the value and what is allowed; the pytest plugin
turns it into a usage error before any device work.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from aorta.fsdp import config_yaml

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
DEFAULT_CONFIG = CONFIG_DIR / "default.yaml"
SMOKE_CONFIG = CONFIG_DIR / "smoke.yaml"

DTYPE_NAMES = ("bf16", "fp16", "fp32")
TRACE_CHOICES = ("auto", "on", "off")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CHOICES = {  # (section, key) -> the values allowed, named when a value of the wrong type is given
    ("fsdp", "param_dtype"): DTYPE_NAMES,
    ("fsdp", "reduce_dtype"): DTYPE_NAMES,
    ("compile", "mode"): COMPILE_MODES,
    ("profiling", "trace"): TRACE_CHOICES,
}


MAX_COMM_BALLAST = 8.0  # --aorta-test-comm-ballast: at most 8x each block's all-gather bytes


class ConfigError(ValueError):
    """A bad configuration key or value; the message names the key, the value and what is allowed."""


def _at_least(obj, name: str, lo: float) -> None:
    value = getattr(obj, name)
    if value < lo:
        raise ConfigError(f"{obj.SECTION}.{name}={value!r}: must be >= {lo}")


def _choice(obj, name: str, allowed: Sequence[str]) -> None:
    value = getattr(obj, name)
    if value not in allowed:
        raise ConfigError(f"{obj.SECTION}.{name}={value!r}: allowed values are {', '.join(allowed)}")


def _choice_or_type(key: str, value, tp) -> str:
    """A value of the wrong type for a field with a fixed set of values names those values."""
    section, _, name = key.partition(".")
    allowed = CHOICES.get((section, name))
    if allowed:
        return f"{key}={value!r}: allowed values are {', '.join(allowed)}"
    return f"{key}={value!r}: expected {_type_name(tp)}, got {type(value).__name__}"


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """The synthetic ranking transformer: F sparse categorical features and D dense features per token,
    projected to ``d_model`` and run through ``n_layers`` encoder blocks, then a scoring head."""

    SECTION: typing.ClassVar[str] = "model"
    n_sparse_features: int = 8
    vocab_size: int = 100_000  # rows per embedding table
    embedding_dim: int = 64
    n_dense_features: int = 64
    d_model: int = 2048
    n_heads: int = 16
    n_layers: int = 8
    ffn_mult: int = 4

    def __post_init__(self) -> None:
        for name in (
            "n_sparse_features",
            "vocab_size",
            "embedding_dim",
            "n_dense_features",
            "d_model",
            "n_heads",
            "n_layers",
            "ffn_mult",
        ):
            _at_least(self, name, 1)
        if self.d_model % self.n_heads:
            raise ConfigError(
                f"model.d_model={self.d_model} must be a multiple of model.n_heads={self.n_heads}"
            )


@dataclass(frozen=True, kw_only=True)
class DatasetConfig:
    """Seeded synthetic batches generated on the device (no dataloader): ``n_batches`` are cycled."""

    SECTION: typing.ClassVar[str] = "dataset"
    batch_size: int = 8  # samples per rank per micro-batch
    seq_len: int = 512  # tokens (events) per sample
    n_batches: int = 4
    seed: int = 1234

    def __post_init__(self) -> None:
        for name in ("batch_size", "seq_len", "n_batches"):
            _at_least(self, name, 1)
        _at_least(self, "seed", 0)


@dataclass(frozen=True, kw_only=True)
class TrainingConfig:
    """Optimizer and step counts; warm-up and timed steps are the same on every rank (never calibrated)."""

    SECTION: typing.ClassVar[str] = "training"
    lr: float = 1e-4
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    lr_warmup_steps: int = 10  # linear LR warm-up (logged per step)
    warmup_steps: int = 3  # untimed steps before timing
    steps: int = 10  # timed steps
    grad_accum_steps: int = 4  # micro-batches per step in the grad_accum scenario
    check_rtol: float = 5e-2  # sharded vs unsharded first-step loss, bf16 compute

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ConfigError(f"training.lr={self.lr!r}: must be > 0")
        for name in ("weight_decay", "grad_clip", "lr_warmup_steps", "warmup_steps"):
            _at_least(self, name, 0)
        for name in ("steps", "grad_accum_steps"):
            _at_least(self, name, 1)
        if not 0 < self.check_rtol < 1:
            raise ConfigError(f"training.check_rtol={self.check_rtol!r}: allowed 0 < check_rtol < 1")


@dataclass(frozen=True, kw_only=True)
class FsdpConfig:
    SECTION: typing.ClassVar[str] = "fsdp"
    param_dtype: str = "bf16"  # MixedPrecisionPolicy.param_dtype (the fp32 scenario overrides it)
    reduce_dtype: str = "fp32"  # MixedPrecisionPolicy.reduce_dtype
    prefetch_blocks: int = 1  # explicit_prefetch: how many next blocks to prefetch
    ddp_bucket_cap_mb: int = 25  # ddp scenario: DistributedDataParallel(bucket_cap_mb=...)
    stress_all_reduce_numel: int = 1 << 20  # comm_stress: one extra all-reduce of this many fp32 per block
    stress_copy_numel: int = 1 << 22  # comm_stress: device->host copy of this many fp32 per step
    # For proving the gate only (--aorta-test-comm-ballast): each FSDP block carries a frozen parameter of
    # this many times its own parameter count, which every all-gather of the block moves and nothing reads
    # (aorta/fsdp/ballast.py). 0: none.
    test_comm_ballast: float = 0.0

    def __post_init__(self) -> None:
        _choice(self, "param_dtype", DTYPE_NAMES)
        _choice(self, "reduce_dtype", DTYPE_NAMES)
        for name in ("prefetch_blocks", "ddp_bucket_cap_mb", "stress_all_reduce_numel", "stress_copy_numel"):
            _at_least(self, name, 1)
        if not 0.0 <= self.test_comm_ballast <= MAX_COMM_BALLAST:
            raise ConfigError(
                f"{self.SECTION}.test_comm_ballast={self.test_comm_ballast!r}: allowed 0 (none) to "
                f"{MAX_COMM_BALLAST:g} times each block's parameters"
            )


@dataclass(frozen=True, kw_only=True)
class CompileConfig:
    SECTION: typing.ClassVar[str] = "compile"
    enabled: bool = True  # the compile scenario runs (False: it skips, saying so)
    mode: str = "default"
    fullgraph: bool = False
    allow_cpu: bool = False  # inductor on CPU needs a C++ toolchain and minutes; skipped unless asked

    def __post_init__(self) -> None:
        _choice(self, "mode", COMPILE_MODES)


@dataclass(frozen=True, kw_only=True)
class ProfilingConfig:
    """torch.profiler schedule (wait, warmup, active steps) for the kernel-timestamp figures."""

    SECTION: typing.ClassVar[str] = "profiling"
    enabled: bool = True
    wait: int = 1
    warmup: int = 1
    active: int = 10  # one sample per profiled step of every kernel-timestamp figure: the gate needs >= 5
    trace: str = (
        "auto"  # write per-rank traces: auto = on for CUDA, off on ROCm (Kineto export crashes) and CPU
    )
    reference: bool = True  # profile an unsharded replica for the compute-slowdown figure (GPU only)

    def __post_init__(self) -> None:
        _at_least(self, "wait", 0)
        _at_least(self, "warmup", 0)
        _at_least(self, "active", 1)
        _choice(self, "trace", TRACE_CHOICES)


@dataclass(frozen=True, kw_only=True)
class FsdpSuiteConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    fsdp: FsdpConfig = field(default_factory=FsdpConfig)
    compile: CompileConfig = field(default_factory=CompileConfig)
    profiling: ProfilingConfig = field(default_factory=ProfilingConfig)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# ----------------------------------------------------------------------------- building from mappings
def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp))


def _coerce(key: str, value, tp):
    """Check ``value`` against the field type ``tp``; ints are accepted for floats, bools are not ints."""
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 3e-4 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                pass
    elif tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):  # YAML 1.1 reads on/off, yes/no, true/false as booleans: on/off meant
            return "on" if value else "off"
    else:  # pragma: no cover - every field is one of the above
        return value
    raise ConfigError(_choice_or_type(key, value, tp))


def _build(cls, data: Mapping, prefix: str):
    if not isinstance(data, Mapping):
        where = f"{prefix[:-1]}={data!r}" if prefix else f"config={data!r}"
        raise ConfigError(f"{where}: expected a mapping of keys (a section), got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        if name not in fields:
            raise ConfigError(
                f"unknown key {key!r}; allowed keys{' under ' + prefix[:-1] if prefix else ''}: "
                f"{', '.join(fields)}"
            )
        tp = hints[name]
        if dataclasses.is_dataclass(tp):
            kwargs[name] = _build(tp, value, f"{key}.")
        else:
            if isinstance(tp, types.UnionType):  # pragma: no cover - no optional fields today
                tp = next(t for t in typing.get_args(tp) if t is not type(None))
            kwargs[name] = _coerce(key, value, tp)
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{prefix[:-1] or 'config'}: {exc}") from None


def _merge(base: dict, top: Mapping) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def parse_override(text: str) -> tuple[list[str], object]:
    """``key.path=value`` -> (["key", "path"], yaml value)."""
    if "=" not in text:
        raise ConfigError(f"--aorta-override {text!r}: expected key.path=value, e.g. training.steps=20")
    key, raw = text.split("=", 1)
    path = [p for p in key.strip().split(".")]
    if not key.strip() or any(not p for p in path):
        raise ConfigError(
            f"--aorta-override {text!r}: empty key; expected key.path=value, e.g. training.steps=20"
        )
    try:
        value = config_yaml.load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"--aorta-override {text!r}: value is not valid YAML ({exc})") from None
    return path, value


def apply_overrides(data: dict, overrides: Sequence[str]) -> dict:
    """Apply every ``key.path=value`` in order (a later one on the same key wins; none is dropped)."""
    out = _merge({}, data)
    for text in overrides:
        path, value = parse_override(text)
        node = out
        for i, part in enumerate(path[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise ConfigError(
                    f"--aorta-override {text!r}: {'.'.join(path[: i + 1])} is a value, not a section"
                )
            node = child
        node[path[-1]] = value
    return out


def read_yaml(path: str | Path) -> dict:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--aorta-config {str(path)!r}: no such file")
    try:
        data = config_yaml.load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"--aorta-config {str(path)!r}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--aorta-config {str(path)!r}: expected a mapping at the top level")
    return data


def check_file(path: str | Path, data: Mapping) -> None:
    """Every section and value of a configuration file as read, before anything is merged on top (missing
    keys take the dataclass defaults); a ``ConfigError`` names the file, the key and what is allowed."""
    try:
        _build(FsdpSuiteConfig, data, "")
    except ConfigError as exc:
        raise ConfigError(f"--aorta-config {str(path)!r}: {exc}") from None


def load_config(
    path: str | Path | None = None, overrides: Sequence[str] = (), *, smoke: bool = False
) -> FsdpSuiteConfig:
    """The configuration in force: file (default.yaml), smoke.yaml when ``smoke``, then ``overrides``.

    The file is checked on its own first, so a section or value that smoke.yaml would replace (``model: 3``,
    ``training: {steps: abc}``) is still an error on a CPU run, not a surprise on the first GPU run.
    """
    return load_config_noting(path, overrides, smoke=smoke)[0]


def load_config_noting(
    path: str | Path | None = None, overrides: Sequence[str] = (), *, smoke: bool = False
) -> tuple[FsdpSuiteConfig, list[str]]:
    """``load_config``, and each value of the user's file (``path``) that smoke sizes replaced
    (``key.path: theirs -> smoke's``; none for the default file)."""
    file = path or DEFAULT_CONFIG
    data = read_yaml(file)
    check_file(file, data)
    replaced: list[str] = []
    if smoke:
        smoke_data = read_yaml(SMOKE_CONFIG)
        if path is not None:
            replaced = config_yaml.smoke_replaced(data, smoke_data)
        data = _merge(data, smoke_data)
    return _build(FsdpSuiteConfig, apply_overrides(data, overrides), ""), replaced
