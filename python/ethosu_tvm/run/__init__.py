"""Running a compiled model's C on this PC, NPU launches answered by the simulator (`tvmc run`, `module.run`)."""
from .host_program import HostProgram, RunError

__all__ = ["HostProgram", "RunError"]
