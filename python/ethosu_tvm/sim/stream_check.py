"""The compiler's last check of its own NPU output: every command stream runs in the simulator before it is written.

Code generation builds streams through Vela's API, which does not check that an operation is executable (it
encodes a DEPTHWISE whose IFM and OFM depths differ without complaint). The simulator applies the hardware's
register-level rules (shapes, depths, block configs, region bounds, weight and scale stream lengths) and checks that
the waits order every DMA against the kernels touching its bytes (`hazards`), so checking each stream once against
memory of the planned sizes proves the NPU can execute it; the check computes no OFM (`Simulator.check`), since
the values on zeroed memory prove nothing. A failure is a compiler bug: it is reported as such, naming the
operator, and nothing is written.
"""
from __future__ import annotations

import re

from ..arch.system import FAST_SCRATCH_REGION
from .errors import SimulatorError
from .simulator import Simulator

_BLOCK_OPERATIONS = frozenset({"NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE"})


class InvalidCommandStream(Exception):
    """The compiler generated a command stream the NPU cannot execute (a bug in the compiler, not in the model)."""


def _operator(artifact, simulator: Simulator, message: str) -> str:
    """The source operator of the block operation the simulator's message names ("command N ..."); code
    generation emits `block_operations` of them per entry of `artifact.ops`, in order."""
    found = re.search(r"\bcommand (\d+) \(NPU_OP_", message)
    if found is None:
        return "before any operation"
    failing = int(found.group(1))
    commands = simulator.commands(artifact.driver_payload)
    position = sum(1 for c in commands if c.index < failing and c.opcode.name in _BLOCK_OPERATIONS)
    for op in artifact.ops:
        if position < op.block_operations:
            return op.source
        position -= op.block_operations
    return "after its last operation"


def check_artifact(artifact) -> None:
    """Check `artifact` (a codegen.NpuArtifact) in the simulator without its arithmetic (`Simulator.check`) on
    zeroed scratch and I/O of the planned sizes; raises InvalidCommandStream."""
    regions = {0: bytearray(artifact.constants), 1: bytearray(max(artifact.scratch_size, 1))}
    if artifact.fast_scratch_size:  # Dedicated_Sram's fast scratch: no stream reaches region 2 without one
        regions[FAST_SCRATCH_REGION] = bytearray(artifact.fast_scratch_size)
    for binding in artifact.inputs + artifact.outputs:
        size = binding.offset + binding.size
        if len(regions.setdefault(binding.region, bytearray(size))) < size:
            regions[binding.region].extend(bytes(size - len(regions[binding.region])))
    simulator = Simulator(artifact.accelerator)
    try:
        simulator.check(artifact.driver_payload, regions, check_hazards=True)
    except SimulatorError as err:
        raise InvalidCommandStream(f"{artifact.name}: the generated command stream cannot run on the NPU "
                                   f"({_operator(artifact, simulator, str(err))}): {err}") from None
