"""Unified static memory planning: every buffer of a compiled model placed at a fixed offset in a pool."""
from .algorithms import ALGORITHMS
from .buffers import Allocation, BufferInfo, MemoryPlan, MemoryPlanError, PlanDoesNotFit, PoolInfo, PoolsTooSmall
from .planner import plan_memory
from .report import plan_to_json, plan_to_png, plan_to_svg
from .verify import verify_plan

__all__ = [
    "ALGORITHMS", "Allocation", "BufferInfo", "MemoryPlan", "MemoryPlanError", "PlanDoesNotFit", "PoolInfo",
    "PoolsTooSmall", "plan_memory", "plan_to_json", "plan_to_png", "plan_to_svg", "verify_plan",
]
