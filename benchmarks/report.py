"""The benchmark's output text from measured rows: Markdown tables (the main report and the cascader's) and the
CSV files' contents."""
from __future__ import annotations

import csv
import io

from rows import PLANNERS, VELA_MODES, CascaderPoint, Row, cascader_targets, ratio, yes_no


def fmt(value) -> str:
    """Markdown cell: thousands separators for integers, 2 decimals for ratios and seconds (2 significant digits
    below 0.1), "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.2g}"
    return str(value)


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def sram_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "ours SRAM (workspace + I/O)", "Vela Perf SRAM", "Vela Size SRAM",
              "TFLM arena", "ours/Vela Perf", "ours/Vela Size", "ours/TFLM", "< TFLM", "≤ Vela Perf",
              "ours, I/O in workspace", "its ratio to Vela Perf"]
    body = []
    for r in rows:
        ratios, perf = r.ratios(), r.vela["vela_perf"]
        below_tflm = None if r.tflm_arena is None else r.ours.sram < r.tflm_arena
        body.append([r.model, r.accelerator, f"{r.ours.sram:,} ({r.ours.workspace:,} + {r.ours.io:,})", perf.sram,
                     r.vela["vela_size"].sram, r.tflm_arena, ratios["sram_vs_vela_perf"],
                     ratios["sram_vs_vela_size"], ratios["sram_vs_tflm"], below_tflm, r.ours.sram <= perf.sram,
                     r.ours.sram_io_in_workspace, ratios["sram_io_in_workspace_vs_vela_perf"]])
    return markdown_table(header, body)


def flash_cycles_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "system", "ours flash (of it, command stream)",
              "Vela Perf flash (+ command stream)", "Vela Size flash (+ command stream)", "flash ours/Perf",
              "incl. command streams", "flash ours/Size", "ours cycles", "Vela Perf cycles", "Vela Size cycles",
              "cycles ours/Perf", "cycles ours/Size", "Vela's own Perf / Size total cycles"]
    body = []
    for r in rows:
        ratios, perf, size = r.ratios(), r.vela["vela_perf"], r.vela["vela_size"]
        body.append([r.model, r.accelerator, r.system, f"{r.ours.flash:,} ({r.ours.command_stream:,})",
                     f"{perf.flash:,} (+ {perf.command_stream:,})", f"{size.flash:,} (+ {size.command_stream:,})",
                     ratios["flash_vs_vela_perf"], ratios["flash_incl_command_stream_vs_vela_perf"],
                     ratios["flash_vs_vela_size"], r.ours.cycles, perf.cycles, size.cycles,
                     ratios["cycles_vs_vela_perf"], ratios["cycles_vs_vela_size"],
                     f"{fmt(perf.own_total_cycles)} / {fmt(size.own_total_cycles)}"])
    return markdown_table(header, body)


def compile_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "ours compile s", "Vela Perf s", "Vela Size s", "ours bit-exact",
              "Vela Perf bit-exact", "Vela Size bit-exact", "ours host ops"]
    body = [[r.model, r.accelerator, r.ours.compile_s, r.vela["vela_perf"].compile_s, r.vela["vela_size"].compile_s,
             r.ours.bit_exact, r.vela["vela_perf"].bit_exact, r.vela["vela_size"].bit_exact, r.ours.host_ops]
            for r in rows]
    return markdown_table(header, body)


def planner_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", *PLANNERS, "lower bound", "exact proven optimal", "default pick",
              "hill_climb/exact ≤ greedy_by_size"]
    body = [[r.model, r.accelerator, *[r.planner(a).size for a in PLANNERS], r.planners[0].lower_bound,
             r.planner("exact").proven_optimal, r.ours.planner, r.planner_target_met] for r in rows]
    return markdown_table(header, body)


def markdown_report(rows: list[Row]) -> str:
    """The four tables (sizes in bytes, cycles at the NPU clock)."""
    sections = [("Peak SRAM (bytes)", sram_table), ("Flash (bytes) and estimated cycles", flash_cycles_table),
                ("Compile wall time and correctness", compile_table), ("Workspace per planner (bytes)", planner_table)]
    return "\n\n".join(f"### {title}\n\n{table(rows)}" for title, table in sections) + "\n"


def curve_table(row: Row) -> str:
    """One model × accelerator: our curve points, then Vela's two builds (SRAM, cycles, bit-exact, compile s)."""
    header = ["point", "limit (NPU scratch)", "SRAM (I/O in workspace)", "NPU scratch", "cycles",
              "cascader's estimate", "estimate/measured", "bit-exact", "compile s", "cascades"]
    body = []
    for p in row.cascader:
        if p.error is not None:
            body.append([p.label, p.limit, "failed", None, None, None, None, None, p.compile_s, p.error])
            continue
        body.append([p.label, p.limit, p.sram, p.npu_scratch, p.cycles, p.estimated_cycles,
                     ratio(p.estimated_cycles, p.cycles), p.bit_exact, p.compile_s, p.cascades])
    for prefix, optimise in VELA_MODES.items():
        vela = row.vela[prefix]
        body.append([f"Vela {optimise}", None, vela.sram, None, vela.cycles, None, None, vela.bit_exact,
                     vela.compile_s, None])
    return markdown_table(header, body)


def point_cell(point: CascaderPoint | None) -> str:
    return "none qualifies" if point is None else point.label


def t1_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "Vela Size SRAM", "Vela Size cycles", "goal: SRAM ≤ 0.9 × Vela Size",
              "ours: smallest SRAM at ≤ Vela Size cycles", "its cycles", "its point", "SRAM ours/Vela Size", "T1"]
    body = []
    for r in rows:
        t = cascader_targets(r)
        p = t.t1_point
        body.append([r.model, r.accelerator, t.vela_size.sram, t.vela_size.cycles, t.t1_goal, p and p.sram,
                     p and p.cycles, point_cell(p), ratio(p and p.sram, t.vela_size.sram),
                     "met" if t.t1_met else "missed"])
    return markdown_table(header, body)


def t2_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "Vela Perf SRAM", "Vela Perf cycles",
              "ours: fewest cycles at SRAM ≤ Vela Perf", "its SRAM", "its point", "cycles ours/Vela Perf", "T2"]
    body = []
    for r in rows:
        t = cascader_targets(r)
        p = t.t2_point
        body.append([r.model, r.accelerator, t.vela_perf.sram, t.vela_perf.cycles, p and p.cycles, p and p.sram,
                     point_cell(p), ratio(p and p.cycles, t.vela_perf.cycles), "met" if t.t2_met else "missed"])
    return markdown_table(header, body)


def cascader_report(rows: list[Row]) -> str:
    """A curve table per model × accelerator, then the T1 and T2 tables (sizes in bytes, cycles at the NPU
    clock)."""
    sections = [(f"Cascader: SRAM vs cycles, {r.model} on {r.accelerator}", curve_table(r)) for r in rows]
    sections += [("Cascader target T1: SRAM ≤ 0.9 × Vela Size at cycles ≤ Vela Size", t1_table(rows)),
                 ("Cascader target T2: cycles ≤ Vela Performance at SRAM ≤ Vela Performance", t2_table(rows))]
    return "\n\n".join(f"### {title}\n\n{table}" for title, table in sections) + "\n"


def records_csv(records: list[dict[str, object]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def cascader_csv_text(rows: list[Row]) -> str:
    """One record per curve point."""
    return records_csv([p.record(r.model, r.accelerator) for r in rows for p in r.cascader])


def cascader_targets_csv_text(rows: list[Row]) -> str:
    """One record per model × accelerator."""
    return records_csv([cascader_targets(r).record(r.model, r.accelerator) for r in rows])


def csv_text(rows: list[Row]) -> str:
    return records_csv([row.record() for row in rows])
