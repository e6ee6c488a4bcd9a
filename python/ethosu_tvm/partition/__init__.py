"""Partitioning: which parts of a QDQ Relax module run on the Ethos-U55, as merged ``Codegen="ethos-u"`` functions.

Patterns (``patterns``) find NPU-capable operators, checks (the table ``constraints``, one module of ``checks`` per
operator family) enforce the U55 limits; an operator that fails a check stays on the host and the report records the
reason.
"""
from __future__ import annotations

from .partitioner import host_only_report, partition_for_ethosu
from .report import OffloadEntry, OffloadReport

__all__ = ["host_only_report", "partition_for_ethosu", "OffloadEntry", "OffloadReport"]
