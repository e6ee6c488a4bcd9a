"""`ethosu_tvm.build`: a QDQ Relax module → the whole compiled model, one stage after another.

    mod = ethosu_tvm.from_tflite("kws.tflite")                         # import: TFLite → QDQ Relax
    module = ethosu_tvm.build(mod, target="ethos-u -accelerator-config=ethos-u55-128,c")
    module.export_model_library_format("module.tar")
    outputs = module.run({"input_1": x})      # the MLF's C on this PC, NPU work in the simulator

The stages, numbered as in docs/architecture.md (each a function of its own package, typed in and out):

0. options (`configure`): the target string, pools and cascader limit → a `BuildConfig`;
1. frontend (`from_tflite`, before build): TFLite → QDQ Relax;
2. partition (`partition_for_ethosu`): NPU-capable operators → merged ``Codegen="ethos-u"`` functions + report;
3. host fusion (`fuse_host_ops`): what stays in main → ``host.<kind>`` composites;
4. legalize (`legalize`): each NPU function → an `NpuGraph` of primitives with integer parameters;
5. host kernels (`build_host_kernels`): each host composite → a plain C function (`HostKernel`);
6. NPU code generation (`compile_npu_graphs`): TE → (cascaded) TIR → Vela API → command streams (`NpuArtifact`);
   with a pool's size as the cascader's limit, each proposal is measured by the workspace plan of stages 7-8
   (`aot.pool_fit`), which is why the host kernels come first;
6a. stream check (`check_artifact`): each stream run once in the simulator, in a thread beside stages 7-9; one the
    NPU cannot execute is never written;
7. AOT program (`build_program`): main → ordered NPU launches and kernel calls over named tensors;
8. memory planning (`plan_workspace`): every buffer placed in the workspace pools;
9. C sources (`generate`, `interface_of`): the AOT runner, header and I/O description;
10. result (`CompiledModel`): `export_model_library_format` writes the MLF tarball, `run` runs its C here.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Optional

import tvm

from .aot.c_source import generate
from .aot.interface import interface_of
from .aot.pool_fit import PoolFit, stand_in
from .aot.program import MODULE, PREFIX, Program, build_program
from .aot.workspace import plan_workspace
from .arch.system import FAST_SCRATCH_REGION
from .build_config import BuildConfig, BuildError, configure, npu_pool, sram_pool_limit
from .cascader import Proposal
from .codegen import NpuArtifact, ScratchIo, compile_npu_graphs, io_in_scratch
from .codegen.cascade import cascade_proposals
from .compiled_model import CompiledModel
from .frontend.attributes import model_io_names, model_states
from .host import REGISTRY, build_copy_kernel, build_host_kernels, fuse_host_ops
from .host.cmsis_nn import OPS as CMSIS_NN_OPS
from .host.cmsis_nn import CmsisNn
from .host.cmsis_nn.report import with_libraries
from .legalize import legalize
from .legalize.ops import NpuGraph
from .memory import PoolInfo, PoolsTooSmall
from .partition import OffloadReport, host_only_report, partition_for_ethosu
from .sim import mlw
from .sim.stream_check import check_artifact


def _partition(mod: tvm.IRModule, config: BuildConfig) -> tuple[tvm.IRModule, OffloadReport]:
    """Stage 2: without an ethos-u target, everything stays on the host."""
    if config.npu is None:
        return mod, host_only_report(mod)
    return partition_for_ethosu(mod, config.npu, config.split_launches)


def _host_kernels(fused: tvm.IRModule, config: BuildConfig, offload: OffloadReport) -> tuple[dict, OffloadReport]:
    """Stage 5, with CMSIS-NN registered for the compile when the target list names it; the offload report then
    says per host operator which library runs it and why."""
    if config.cmsis_nn is None:
        return build_host_kernels(fused, config.host, PREFIX), offload
    cmsis_nn = CmsisNn(config.cmsis_nn)
    with REGISTRY.registered(cmsis_nn, CMSIS_NN_OPS):
        kernels = build_host_kernels(fused, config.host, PREFIX)
    return kernels, with_libraries(offload, fused, kernels, cmsis_nn)


def _npu_graphs(fused: tvm.IRModule, config: BuildConfig) -> list[NpuGraph]:
    """Stage 4: the legalized NPU subgraphs, in main's call order (none without an ethos-u target)."""
    return legalize(fused) if config.npu is not None else []


def _program(fused: tvm.IRModule, mod: tvm.IRModule, artifacts: list[NpuArtifact], kernels: dict,
             config: BuildConfig) -> Program:
    """Stage 7: the program over the NPU launches `artifacts` and the host `kernels`."""
    return build_program(fused, artifacts, kernels, *model_io_names(mod), model_states(mod),
                         lambda t, n: build_copy_kernel(t.nbytes, config.host, f"{PREFIX}_copy_{n}"))


def _pool_fit(fused: tvm.IRModule, mod: tvm.IRModule, kernels: dict, config: BuildConfig, graphs: list[NpuGraph],
              scratch_io: dict[str, ScratchIo], cascader_sram_limit: Optional[int]) -> Optional[PoolFit]:
    """How the cascader measures its proposals against the NPU's pool, when its limit is that pool's size (no
    explicit cascader limit, no forced proposal); None otherwise (the limit is on the NPU scratch alone). Under
    Dedicated_Sram the limit is the fast scratch pool's, which holds each launch's fast scratch alone while it runs
    (`compile_cascaded` measures that)."""
    index = npu_pool(config.pools)
    cascader = config.cascader
    if cascader is None or cascader_sram_limit is not None or cascader.force_proposal is not None or index is None \
            or config.npu.system.cache_region == FAST_SCRATCH_REGION:
        return None
    stand_ins = tuple(stand_in(g, scratch_io.get(g.function, ScratchIo()).names(g), config.npu.accelerator)
                      for g in graphs)
    return PoolFit(lambda artifacts: _program(fused, mod, artifacts, kernels, config), stand_ins, config.pools,
                   index, config.memory_planner, config.io_in_workspace)


def build(mod: tvm.IRModule, target: str = "ethos-u -accelerator-config=ethos-u55-128,c", params=None,
          executor: str = "aot", pass_config: Optional[dict] = None, memory_planner: Optional[str] = None,
          workspace_pools: Optional[list[PoolInfo]] = None, use_workspace_io: bool = False,
          cascader_sram_limit: Optional[int] = None, split_launches: bool = False,
          progress: Optional[Callable[[str], None]] = None) -> CompiledModel:
    """Compile a QDQ Relax module (from :func:`ethosu_tvm.from_tflite`) for `target`.

    `params` exists for relay.build compatibility: the imported module already carries its constants, so only
    None or an empty dict is accepted. Raises TargetError/BuildError for bad options, UnsupportedHostOp for an
    operator neither the NPU nor a host kernel implements, PlanDoesNotFit when the pools are too small,
    CascaderError when no cascading schedule fits the cascader's SRAM limit (`cascader_sram_limit` bytes of NPU
    scratch, by default the size hint of the NPU's first pool; the target must enable the cascader), and
    InvalidCommandStream, a compiler bug, when a generated command stream fails the simulator's checks.
    `split_launches` makes a debug build: every NPU operator a launch of its own, so that a layer dump
    (`CompiledModel.run(..., debug_layers=DIR)`) holds every operator's output (see `ethosu_tvm.debug_layers`); it
    needs an ethos-u target (BuildError without: a host-only build is a kernel per operator already).
    `progress` is called with a short message as each stage starts (partition, legalization, cascader search N/M,
    code generation, memory planning); it only observes: the result does not depend on it.
    """
    report = progress or (lambda message: None)
    if params:
        raise BuildError("params: the imported module already carries its constants; pass params=None")
    config = configure(target, executor, pass_config, memory_planner, workspace_pools, use_workspace_io,
                       cascader_sram_limit, split_launches)
    if config.npu is not None:
        mlw.start()  # the stream check's weight decoder process starts up while the stages before it run
    report(f"partition for {config.npu.accelerator}" if config.npu is not None else "partition: host only")
    partitioned, offload = _partition(mod, config)
    fused = fuse_host_ops(partitioned)
    report("legalization")
    graphs = _npu_graphs(fused, config)
    report("code generation: host kernels")
    kernels, offload = _host_kernels(fused, config, offload)
    artifacts = []
    if config.npu is not None:
        scratch_io = io_in_scratch(fused, config.io_in_workspace, len(model_states(mod)))
        fit = _pool_fit(fused, mod, kernels, config, graphs, scratch_io, cascader_sram_limit)
        artifacts = compile_npu_graphs(graphs, config.npu, scratch_io, config.cascader, report,
                                       sram_pool_limit(config.npu, config.pools),
                                       None if fit is None else fit.budget)
        report("code generation: checking the NPU command streams in the simulator")
    checked = _check_beside(artifacts)
    try:
        program = _program(fused, mod, artifacts, kernels, config)
        report("memory planning")
        workspace = _plan_workspace(program, config, artifacts)
        sources = generate(program, workspace, config.user_pools, MODULE)
        interface = interface_of(program, workspace, config.npu, config.user_pools)
    finally:  # a stream the NPU cannot execute fails the build, before whatever else failed
        checked.result()
    return CompiledModel(config, partitioned, offload, program, workspace, sources, interface)


def _check_beside(artifacts: list[NpuArtifact]) -> Future:
    """Stage 6a in a thread of its own, beside stages 7-9: the check mostly waits for its weight streams' decodes
    in the helper processes (`sim.mlw`), which then leaves this process's interpreter to the stages."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stream-check")
    checked = executor.submit(lambda: [check_artifact(artifact) for artifact in artifacts])
    executor.shutdown(wait=False)  # its thread ends with the check
    return checked


def _plan_workspace(program: Program, config: BuildConfig, artifacts: list[NpuArtifact]):
    """Stage 8; without the cascader, pools too small for the NPU's scratch say that it would cut it."""
    try:
        return plan_workspace(program, list(config.pools), config.memory_planner, config.io_in_workspace)
    except PoolsTooSmall as err:
        if not artifacts or config.cascader is not None:
            raise
        # Without the cascader each NPU launch holds whole feature maps; with it they can be cut into stripes.
        raise PoolsTooSmall(f"{err} (the NPU's scratch can be smaller with the cascader: -enable-cascader=1 in "
                             "the ethos-u target)") from None


def cascader_frontiers(mod: tvm.IRModule, target: str = "ethos-u -accelerator-config=ethos-u55-128 "
                       "-enable-cascader=1,c", use_workspace_io: bool = False) -> dict[str, list[Proposal]]:
    """The cascader's Pareto frontier of proposals (by increasing memory) for each NPU subgraph, by subgraph name
    (``ethos_u_0``, ...): what `build` with the same arguments chooses from. The target must enable the cascader."""
    config = configure(target, use_workspace_io=use_workspace_io)
    if config.cascader is None:
        raise BuildError("the cascader's frontiers need the cascader: add -enable-cascader=1 to the ethos-u target")
    fused = fuse_host_ops(_partition(mod, config)[0])
    scratch_io = io_in_scratch(fused, config.io_in_workspace, len(model_states(mod)))
    frontiers = {}
    for graph in _npu_graphs(fused, config):
        in_scratch = scratch_io.get(graph.function, ScratchIo()).names(graph)
        frontiers[graph.name] = cascade_proposals(graph, config.npu, config.cascader.options, in_scratch)
    return frontiers
