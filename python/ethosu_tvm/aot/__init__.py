"""The AOT stage: a partitioned module's main as ordered NPU launches and host kernel calls (`program`), its
buffers planned into workspace pools (`workspace`), and the C runner and header generated from both
(`c_source`, `interface`)."""
from .c_source import CSources, generate
from .interface import ModelInterface, interface_of
from .program import HostStep, ModelIO, NpuStep, Program, TensorRef, build_program
from .workspace import Workspace, plan_workspace

__all__ = ["CSources", "HostStep", "ModelIO", "ModelInterface", "NpuStep", "Program", "TensorRef", "Workspace",
           "build_program", "generate", "interface_of", "plan_workspace"]
