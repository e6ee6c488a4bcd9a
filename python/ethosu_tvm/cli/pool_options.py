"""Old tvmc's workspace-pool flags: `--workspace-pools=sram,dram` plus per-pool `--workspace-pools-<property>=
pool:value[,pool:value...]` (repeatable), turned into PoolInfo in the user's order."""
from __future__ import annotations

from ..memory import PoolInfo
from .errors import CommandError

# flag suffix → (PoolInfo field, value parser)
_PROPERTIES = {
    "size-hint-bytes": ("size_hint_bytes", int),
    "clock-frequency-hz": ("clock_frequency_hz", int),
    "read-bandwidth-bytes-per-cycle": ("read_bandwidth_bytes_per_cycle", float),
    "write-bandwidth-bytes-per-cycle": ("write_bandwidth_bytes_per_cycle", float),
    "read-latency-cycles": ("read_latency_cycles", int),
    "write-latency-cycles": ("write_latency_cycles", int),
}


def add_arguments(parser) -> None:
    parser.add_argument("--workspace-pools", metavar="NAME[,NAME...]",
                        help="memories for the workspace, filled in this order (default: one unbounded pool)")
    for suffix in ("targets", *_PROPERTIES, "target-burst-bytes"):
        parser.add_argument(f"--workspace-pools-{suffix}", action="append", default=[],
                            metavar="POOL:TARGET:BYTES" if suffix == "target-burst-bytes" else "POOL:VALUE",
                            help="per pool, comma-separated or repeated")
    parser.add_argument("--use-workspace-io", action="store_true",
                        help="place inputs and outputs in the workspace (tvmgen_default_map_inputs/outputs)")


def _entries(flag: str, values: list[str], names: list[str], parts: int) -> list[list[str]]:
    entries = [item.split(":") for value in values for item in value.split(",") if item.strip()]
    for entry in entries:
        if len(entry) != parts or not all(entry):
            shape = "POOL:TARGET:BYTES" if parts == 3 else "POOL:VALUE"
            raise CommandError(f"--workspace-pools-{flag} takes {shape}, got {':'.join(entry)!r}")
        if entry[0] not in names:
            raise CommandError(f"--workspace-pools-{flag} names pool {entry[0]!r}, which is not in --workspace-pools "
                               f"({', '.join(names) or 'none given'})")
    return entries


def _number(flag: str, text: str, parse):
    try:
        value = parse(text)
    except ValueError:
        raise CommandError(f"--workspace-pools-{flag} needs a number, got {text!r}") from None
    if value < 0:
        raise CommandError(f"--workspace-pools-{flag} must not be negative, got {text!r}")
    return value


def workspace_pools(args) -> list[PoolInfo] | None:
    """The pools the flags describe (None without --workspace-pools)."""
    names = [n.strip() for n in (args.workspace_pools or "").split(",") if n.strip()]
    flags = {suffix: getattr(args, f"workspace_pools_{suffix.replace('-', '_')}")
             for suffix in ("targets", *_PROPERTIES, "target-burst-bytes")}
    if not names:
        given = [suffix for suffix, values in flags.items() if values]
        if given:
            raise CommandError(f"--workspace-pools-{given[0]} needs --workspace-pools")
        return None
    fields: dict[str, dict] = {name: {} for name in names}
    for pool, target in _entries("targets", flags["targets"], names, 2):
        fields[pool].setdefault("targets", ())
        fields[pool]["targets"] += (target,)
    for suffix, (field, parse) in _PROPERTIES.items():
        for pool, value in _entries(suffix, flags[suffix], names, 2):
            fields[pool][field] = _number(suffix, value, parse)
    for pool, target, value in _entries("target-burst-bytes", flags["target-burst-bytes"], names, 3):
        fields[pool]["target_burst_bytes"] = fields[pool].get("target_burst_bytes", ()) + (
            (target, _number("target-burst-bytes", value, int)),)
    return [PoolInfo(name, **fields[name]) for name in names]
