"""Firmware projects around a compiled model: board templates (start-up code, linker script, CMake and toolchain
files) and the generated main.c (`tvmc micro create-project`, project.py)."""
from pathlib import Path

# Each template is a folder of files copied into the project as they are.
TEMPLATES = {"corstone300": Path(__file__).with_name("corstone300")}
