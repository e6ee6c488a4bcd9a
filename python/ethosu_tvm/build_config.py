"""The options of a build, validated: targets, executor, pass config, memory planner, pools, I/O placement and the
cascader's settings. Everything :func:`ethosu_tvm.build` was asked for becomes one :class:`BuildConfig`."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Optional

import tvm

from .cascader import CascaderOptions
from .codegen import CascaderSettings
from .host import host_target
from .arch.system import FAST_SCRATCH_POOL, FAST_SCRATCH_REGION
from .memory import PoolInfo
from .partition.patterns import CODEGEN
from .target import (CmsisNnTarget, EthosuTarget, TargetError, cmsis_nn_target_from_options, ethosu_target_from_options,
                     format_target, parse_target_list)

# Pass-config keys of old tvmc this flow understands, with what they control here.
PASS_CONFIG = {
    "tir.usmp.enable": "always on: every buffer is statically planned",
    "tir.usmp.algorithm": "memory planning algorithm",
    "tir.disable_vectorize": "accepted; the host kernels are never vectorized",
    "tir.disable_storage_rewrite": "accepted; no effect",
    "tir.usmp.use_workspace_io": "place the model's inputs and outputs in the workspace pools",
}


class BuildError(ValueError):
    """The build options are invalid (target, executor, pass config, pools); the message says which."""


@dataclass(frozen=True)
class BuildConfig:
    """Everything `build` was asked for, validated."""

    npu: Optional[EthosuTarget]
    host: tvm.target.Target
    targets: tuple[str, ...]
    memory_planner: str = "auto"
    pools: tuple[PoolInfo, ...] = (PoolInfo("workspace"),)
    user_pools: bool = False
    io_in_workspace: bool = False
    cascader: Optional[CascaderSettings] = None
    split_launches: bool = False  # one NPU launch per operator (debug builds: `partition_for_ethosu`)
    cmsis_nn: Optional[CmsisNnTarget] = None  # host operators CMSIS-NN computes exactly become calls of its kernels


def _flag(config: dict, key: str) -> bool:
    value = str(config.get(key, "0")).strip().lower()
    if value not in ("0", "1", "true", "false"):
        raise BuildError(f"pass config {key} takes 0/1/true/false, got {config[key]!r}")
    return value in ("1", "true")


def npu_pool(pools: tuple[PoolInfo, ...]) -> Optional[int]:
    """The index of the first pool the NPU's scratch can use that has a size hint (None: none has)."""
    return next((i for i, p in enumerate(pools) if p.size_hint_bytes is not None and p.reachable_by({CODEGEN})
                 and p.name != FAST_SCRATCH_POOL), None)


def sram_pool_limit(npu: Optional[EthosuTarget], pools: tuple[PoolInfo, ...]) -> Optional[int]:
    """The bytes the pool holding the NPU's SRAM buffers (weight buffers, the cascader's rolling buffers and a
    launch's intermediates) may take (None: no limit): under Dedicated_Sram the fast scratch pool's size hint (the
    workspace is DRAM there), else `npu_pool_limit`."""
    if npu is not None and npu.system.cache_region == FAST_SCRATCH_REGION:
        return next(p.size_hint_bytes for p in pools if p.name == FAST_SCRATCH_POOL)
    return npu_pool_limit(pools)


def _with_fast_scratch(npu: Optional[EthosuTarget], pools: tuple[PoolInfo, ...]) -> tuple[PoolInfo, ...]:
    """The pools with Dedicated_Sram's fast scratch pool (unbounded, as Vela's Dedicated_Sram; the application
    bounds it by naming it in its pools with a size hint). Outside Dedicated_Sram no pool may take its name."""
    named = any(p.name == FAST_SCRATCH_POOL for p in pools)
    if npu is None or npu.system.cache_region != FAST_SCRATCH_REGION:
        if named:
            raise BuildError(f"workspace pool {FAST_SCRATCH_POOL!r} is the fast scratch of memory mode Dedicated_Sram "
                             "(-memory-mode=Dedicated_Sram in the ethos-u target); name the pool otherwise")
        return pools
    return pools if named else pools + (PoolInfo(FAST_SCRATCH_POOL, targets=(CODEGEN,)),)


def npu_pool_limit(pools: tuple[PoolInfo, ...]) -> Optional[int]:
    """The size hint of `npu_pool` (None: no limit): the SRAM the NPU's scratch, weight buffers included, must
    fit."""
    index = npu_pool(pools)
    return None if index is None else pools[index].size_hint_bytes


def _cascader(npu: Optional[EthosuTarget], pools: tuple[PoolInfo, ...],
              sram_limit: Optional[int]) -> Optional[CascaderSettings]:
    """The cascader's settings, when the ethos-u target enables it. Its SRAM limit is `sram_limit`, or else
    `sram_pool_limit` (None: no limit, the smallest schedule)."""
    if sram_limit is not None and sram_limit < 0:
        raise BuildError(f"the cascader's SRAM limit must not be negative, got {sram_limit}")
    if npu is None or not (npu.enable_cascader or npu.enable_striping):
        if sram_limit is not None:
            raise BuildError("a cascader SRAM limit needs the cascader: add -enable-cascader=1 to the ethos-u target")
        return None
    if sram_limit is None:
        sram_limit = sram_pool_limit(npu, pools)
    options = CascaderOptions(enable_cascading=npu.enable_cascader, enable_striping=True)
    log = (lambda line: print(f"cascader: {line}", file=sys.stderr, flush=True)) if npu.dev_log_plans else None
    return CascaderSettings(options, sram_limit, npu.dev_select_proposal, log)


def configure(target: str, executor: str = "aot", pass_config: Optional[dict] = None,
              memory_planner: Optional[str] = None, pools: Optional[list[PoolInfo]] = None,
              use_workspace_io: bool = False, cascader_sram_limit: Optional[int] = None,
              split_launches: bool = False) -> BuildConfig:
    """Validate the options of a build (raises TargetError or BuildError)."""
    targets = parse_target_list(target)
    kinds = [t["kind"] for t in targets]
    if "c" not in kinds:
        raise TargetError("the target list needs the host target 'c' (e.g. \"ethos-u -accelerator-config="
                          "ethos-u55-128\",c): operators and the runner run on the Cortex-M")
    unsupported = [k for k in kinds if k not in ("ethos-u", "cmsis-nn", "c")]
    if unsupported:
        raise TargetError(f"target kind {unsupported[0]!r} is not supported by this flow; use ethos-u, cmsis-nn and c")
    if executor != "aot":
        raise BuildError(f"executor {executor!r} is not supported; only 'aot' (the C runner) is")
    config = dict(pass_config or {})
    unknown = sorted(set(config) - set(PASS_CONFIG))
    if unknown:
        raise BuildError(f"unknown pass config {unknown[0]!r}; known: {', '.join(PASS_CONFIG)}")
    planner = memory_planner or str(config.get("tir.usmp.algorithm", "auto"))
    from .memory import ALGORITHMS

    if planner != "auto" and planner not in ALGORITHMS:
        raise BuildError(f"unknown memory planner {planner!r}; choose one of auto, {', '.join(ALGORITHMS)}")
    npu = next((ethosu_target_from_options(t) for t in targets if t["kind"] == "ethos-u"), None)
    if split_launches and npu is None:
        raise BuildError("one NPU launch per operator needs an ethos-u target: a host-only build has no NPU launch, "
                         "each operator is a host kernel of its own already")
    host_mcpu = next(t for t in targets if t["kind"] == "c").get("mcpu")
    host = host_target(host_mcpu)
    cmsis_nn = next((cmsis_nn_target_from_options(t, host_mcpu) for t in targets if t["kind"] == "cmsis-nn"), None)
    io_in_workspace = use_workspace_io or _flag(config, "tir.usmp.use_workspace_io")
    names = [p.name for p in pools or []]
    if len(set(names)) != len(names) or any(not re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
        raise BuildError(f"workspace pool names must be distinct C identifiers, got {', '.join(names)}")
    planned = _with_fast_scratch(npu, tuple(pools) if pools else (PoolInfo("workspace"),))
    # I/O in the workspace means the application owns the pools: it writes inputs into them.
    return BuildConfig(npu, host, tuple(format_target(t) for t in targets), planner, planned,
                       bool(pools) or io_in_workspace, io_in_workspace, _cascader(npu, planned, cascader_sram_limit),
                       split_launches, cmsis_nn)
