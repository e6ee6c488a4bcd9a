"""Firmware projects around a compiled model: board templates (start-up code, linker script, CMake and toolchain
files; a Zephyr application) and the generated main.c (`tvmc micro create-project`, project.py)."""
from pathlib import Path

# Each template is a folder of files copied into the project as they are.
TEMPLATES = {name: Path(__file__).with_name(name) for name in ("corstone300", "zephyr")}
