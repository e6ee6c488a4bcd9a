"""Target strings: our own parser, because TVM 0.27 no longer parses option strings.

Two forms are understood:

* one target, ``"ethos-u -accelerator-config=ethos-u55-128 -enable-cascader=1"`` → :class:`EthosuTarget`
  (via :func:`parse_ethosu_target`);
* a tvmc-style list, ``"ethos-u -accelerator-config=ethos-u55-128",c -mcpu=cortex-m55`` → one option dict per
  kind (via :func:`parse_target_list`), e.g. ``[{"kind": "ethos-u", "accelerator-config": "ethos-u55-128"},
  {"kind": "c", "mcpu": "cortex-m55"}]``.

Options are written ``-key=value``, ``--key=value``, ``-key value`` or a bare ``-flag`` (meaning true); ``_`` and
``-`` in a key are the same (TVM's own tests spell ``-accelerator_config``), and spaces around the commas of a list
are ignored.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from .arch import ACCELERATORS
from .arch.system import (COMPILER_MEMORY_MODES, DEFAULT_MEMORY_MODE, MEMORY_MODES, PRODUCT_SYSTEM_CONFIGS,
                          SYSTEM_CONFIGS, System, default_system_config)


class TargetError(ValueError):
    """A target string names an unknown kind, option or value."""


DEFAULT_ACCELERATOR = "ethos-u55-256"

_BOOLEAN_VALUES = {"1": True, "true": True, "0": False, "false": False}
_ETHOSU_FLAGS = ("enable-cascader", "enable-striping", "disable-copying-constants", "dev-log-plans")
_ETHOSU_INTEGERS = ("dev-select-proposal",)
_ETHOSU_CHOICES = ("system-config", "memory-mode")

# Option names each target kind accepts (values other than ethos-u's are passed through unchecked).
KIND_OPTIONS = {
    "ethos-u": ("accelerator-config",) + _ETHOSU_CHOICES + _ETHOSU_FLAGS + _ETHOSU_INTEGERS,
    "cmsis-nn": ("mcpu", "mattr"),
    "c": ("mcpu", "march", "workspace-byte-alignment", "constants-byte-alignment"),
    "llvm": ("mtriple", "mcpu", "mattr", "mfloat-abi", "mabi", "num-cores"),
}


def _check_choice(option: str, value: str, known, supported, unsupported: str = "is not yet supported by the compiler"
                  ) -> None:
    """Refuse a value nobody knows, and one the hardware has but the compiler does not take (`unsupported` says
    why)."""
    if value not in supported:
        problem = f"{option} {value!r} {unsupported}" if value in known else f"unknown {option} {value!r}"
        raise TargetError(f"{problem}; valid: {', '.join(supported)}")


@dataclass(frozen=True)
class EthosuTarget:
    """The NPU a model is compiled for, and how to schedule it.

    `enable_cascader`: run chains of operators stripe by stripe (cascades) to fit an SRAM limit.
    `enable_striping`: let the cascader split single operators into row stripes too (alone: no cascades).
    `dev_log_plans`, `dev_select_proposal`: developer options; print every proposal the cascader finds, and
    take the proposal with this index in its frontier instead of choosing by the SRAM limit.
    `disable_copying_constants` is accepted for compatibility: weights are always read from flash.
    `system_config`, `memory_mode`: the system the cost model assumes (Vela's names, `arch.system`): its clock and
    memory bandwidths, and whether constants are in flash or DRAM (Shared_Sram) or SRAM (Sram_Only). They steer
    block selection and the cascader; the NPU code reads constants from region 0 either way. Dedicated_Sram (a U65
    with DRAM) keeps the I/O and workspace in DRAM too, and each launch's intermediates and weight buffers in a
    fast scratch in SRAM (region 2). The system config must be one of the accelerator's product (by default its first,
    `arch.system.PRODUCT_SYSTEM_CONFIGS`).
    """

    accelerator: str = DEFAULT_ACCELERATOR
    enable_cascader: bool = False
    enable_striping: bool = False
    disable_copying_constants: bool = False
    dev_log_plans: bool = False
    dev_select_proposal: int | None = None
    system_config: str | None = None
    memory_mode: str = DEFAULT_MEMORY_MODE

    def __post_init__(self):
        _check_choice("accelerator-config", self.accelerator, ACCELERATORS, ACCELERATORS)
        product = ACCELERATORS[self.accelerator].product
        configs = PRODUCT_SYSTEM_CONFIGS[product]
        if self.system_config is None:
            object.__setattr__(self, "system_config", default_system_config(self.accelerator))
        _check_choice("system-config", self.system_config, SYSTEM_CONFIGS, configs, f"is not an {product} system")
        _check_choice("memory-mode", self.memory_mode, MEMORY_MODES, COMPILER_MEMORY_MODES[product],
                      f"is not an {product} memory mode")
        try:
            self.system
        except ValueError as error:  # Dedicated_Sram on a system without DRAM
            raise TargetError(str(error)) from None

    @property
    def system(self) -> System:
        """The system config in its memory mode around this accelerator, as the cost model takes it."""
        return System(SYSTEM_CONFIGS[self.system_config], self.memory_mode).for_accelerator(
            ACCELERATORS[self.accelerator])

    @property
    def macs(self) -> int:
        """MAC units per cycle (32, 64, 128 or 256)."""
        return ACCELERATORS[self.accelerator].macs

    @property
    def npu_accelerator(self):
        """The Vela API enum value of the accelerator (see `arch.Accelerator.vela_accelerator`)."""
        return ACCELERATORS[self.accelerator].vela_accelerator


def _split_options(kind: str, tokens: list[str]) -> dict[str, str]:
    """Turn ``-k=v``/``--k=v``/``-k v``/``-flag`` tokens into a dict keyed by the ``-`` spelling of each name,
    rejecting names the kind does not know."""
    valid = KIND_OPTIONS[kind]
    options: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("-") or token.lstrip("-") == "":
            raise TargetError(f"unexpected {token!r} in the {kind} target; options look like -key=value")
        written, eq, value = token.lstrip("-").partition("=")
        key = written.replace("_", "-")
        if key not in valid:
            raise TargetError(f"unknown option {written!r} for target {kind}; valid: {', '.join(valid)}")
        if not eq:
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value = tokens[i + 1]
                i += 1
            else:
                value = "1"
        options[key] = value
        i += 1
    return options


def _parse_one(text: str) -> dict[str, str]:
    tokens = text.split()
    if not tokens:
        raise TargetError("empty target; valid kinds: " + ", ".join(KIND_OPTIONS))
    kind = tokens[0]
    if kind not in KIND_OPTIONS:
        raise TargetError(f"unknown target kind {kind!r}; valid: {', '.join(KIND_OPTIONS)}")
    return {"kind": kind, **_split_options(kind, tokens[1:])}


def _split_targets(text: str) -> list[str]:
    """Split at commas that are outside quotes; quotes group one target's kind and options."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace = ","
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return [part.strip() for part in lexer]
    except ValueError as err:  # shlex reports unbalanced quotes this way
        raise TargetError(f"cannot parse target {text!r}: {err}") from err


def parse_target_list(text: str) -> list[dict[str, str]]:
    """Parse a tvmc-style comma-separated target list into one option dict per target (with ``kind``)."""
    targets = [_parse_one(part) for part in _split_targets(text)]
    if not targets:
        raise TargetError("empty target; valid kinds: " + ", ".join(KIND_OPTIONS))
    return targets


def format_target(options: dict[str, str]) -> str:
    """One option dict of :func:`parse_target_list` back as text, e.g. ``"c -mcpu=cortex-m55"``."""
    return " ".join([options["kind"]] + [f"-{key}={value}" for key, value in options.items() if key != "kind"])


def format_target_list(targets: list[dict[str, str]]) -> str:
    """Option dicts back as a list :func:`parse_target_list` reads; an entry whose value holds a comma
    (``-mattr=+nodsp,+nomve``) is quoted, so that it stays one entry."""
    texts = [format_target(options) for options in targets]
    return ",".join(f'"{text}"' if "," in text else text for text in texts)


def _boolean(key: str, value: str) -> bool:
    try:
        return _BOOLEAN_VALUES[value.lower()]
    except KeyError:
        raise TargetError(f"option {key} takes a boolean, got {value!r}; valid: 1, 0, true, false") from None


def _integer(key: str, value: str) -> int:
    if not value.isdigit():
        raise TargetError(f"option {key} takes a non-negative integer, got {value!r}")
    return int(value)


def ethosu_target_from_options(options: dict[str, str]) -> EthosuTarget:
    """Build an EthosuTarget from an option dict as :func:`parse_target_list` returns it."""
    if options.get("kind", "ethos-u") != "ethos-u":
        raise TargetError(f"expected an ethos-u target, got {options['kind']!r}")
    flags = {key.replace("-", "_"): _boolean(key, options[key]) for key in _ETHOSU_FLAGS if key in options}
    flags.update({key.replace("-", "_"): _integer(key, options[key]) for key in _ETHOSU_INTEGERS if key in options})
    choices = {key.replace("-", "_"): options[key] for key in _ETHOSU_CHOICES if key in options}
    return EthosuTarget(accelerator=options.get("accelerator-config", DEFAULT_ACCELERATOR), **choices, **flags)


# CMSIS-NN's kernels take one of three code paths, chosen when the library is compiled for a CPU: plain C, the DSP
# extension's SIMD instructions, or the M-profile vector extension (MVE, Helium). The path sets the scratch sizes.
SCALAR, DSP, MVE = "scalar", "dsp", "mve"
CMSIS_NN_CPUS = {"cortex-m0": SCALAR, "cortex-m0plus": SCALAR, "cortex-m3": SCALAR, "cortex-m23": SCALAR,
                 "cortex-m4": DSP, "cortex-m7": DSP, "cortex-m33": DSP, "cortex-m35p": DSP,
                 "cortex-m55": MVE, "cortex-m85": MVE}
# What each -mattr feature removal leaves of an extension level (MVE implies DSP: without DSP there is no MVE).
_CMSIS_NN_ATTRS = {"+nodsp": {MVE: SCALAR, DSP: SCALAR}, "+nomve": {MVE: DSP}}


@dataclass(frozen=True)
class CmsisNnTarget:
    """The Cortex-M CPU CMSIS-NN runs on, and the code path (`extension`: scalar, dsp or mve) its kernels take."""

    mcpu: str
    extension: str


def cmsis_nn_target_from_options(options: dict[str, str], host_mcpu: str | None = None) -> CmsisNnTarget:
    """The CmsisNnTarget of a ``cmsis-nn`` option dict; its -mcpu defaults to the c target's (`host_mcpu`)."""
    mcpu = options.get("mcpu", host_mcpu)
    if mcpu not in CMSIS_NN_CPUS:
        problem = f"unknown -mcpu {mcpu!r}" if mcpu else "no -mcpu (on cmsis-nn or c)"
        raise TargetError(f"{problem} for target cmsis-nn; valid: {', '.join(CMSIS_NN_CPUS)}")
    extension = CMSIS_NN_CPUS[mcpu]
    for attribute in filter(None, (a.strip() for a in options.get("mattr", "").split(","))):
        if attribute not in _CMSIS_NN_ATTRS:
            raise TargetError(f"unknown -mattr {attribute!r} for target cmsis-nn; valid: {', '.join(_CMSIS_NN_ATTRS)}")
        extension = _CMSIS_NN_ATTRS[attribute].get(extension, extension)
    return CmsisNnTarget(mcpu, extension)


def parse_ethosu_target(text: str) -> EthosuTarget:
    """Parse one ``ethos-u ...`` target string (also accepted: the bare accelerator name)."""
    text = text.strip().strip("\"'")
    if text in ACCELERATORS:
        return EthosuTarget(accelerator=text)
    return ethosu_target_from_options(_parse_one(text))
