"""`tvmc micro create-project [-f] PROJECT_DIR MLF {corstone300,zephyr} [--inputs IN.npz]`: a firmware project
around a compiled tarball (bare metal, or a Zephyr application), as old TVM's `tvmc micro create-project` made one
from a template (ethosu_tvm.firmware).

The folder appears whole or not at all: it is built beside its destination and renamed into place."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .errors import CommandError
from .files import add_input_arguments, model_inputs, read_mlf


def add_parser(commands) -> None:
    from ..firmware import TEMPLATES

    micro = commands.add_parser("micro", help="firmware projects for a compiled model",
                                description="Firmware projects for a compiled model.")
    actions = micro.add_subparsers(dest="action", metavar="{create-project}", required=True)
    create = actions.add_parser("create-project", help="a firmware project folder that builds with CMake",
                                description="Make PROJECT_DIR: the template's files (corstone300: bare-metal "
                                            "start-up code, linker script, CMake files; zephyr: a Zephyr "
                                            "application), the model in model/, and a main.c that runs it once on "
                                            "fixed inputs and prints its outputs.")
    create.add_argument("project_dir", metavar="PROJECT_DIR", help="the folder to create")
    create.add_argument("module", metavar="MLF", help="the MLF tarball from tvmc compile")
    create.add_argument("template", choices=sorted(TEMPLATES), help="the board")
    create.add_argument("-f", "--force", action="store_true", help="replace PROJECT_DIR if it exists")
    add_input_arguments(create)
    create.set_defaults(handler=create_project)


def create_project(args) -> int:
    from ..firmware.project import write_project
    from ..run.host_program import input_arrays

    destination = Path(args.project_dir)
    parent = destination.parent if str(destination.parent) else Path(".")
    if destination.exists() and not (args.force and destination.is_dir()):
        raise CommandError(f"{destination} exists" + ("" if args.force else " (-f replaces it)"))
    if not parent.is_dir():
        raise CommandError(f"cannot create {destination}: directory {parent} does not exist")
    try:
        work = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=parent))
    except OSError as err:
        raise CommandError(f"cannot create {destination}: {err.strerror}") from None
    try:
        interface = read_mlf(args.module, work / "mlf")
        inputs = input_arrays(interface, model_inputs(args, interface))
        write_project(work / "project", work / "mlf", interface, inputs, args.template)
        if destination.exists():
            shutil.rmtree(destination)
        (work / "project").rename(destination)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    build = (f"west build -b mps3/corstone300/an547 {destination}" if args.template == "zephyr" else
             f"cmake -S {destination} -B {destination}/build -DCMAKE_TOOLCHAIN_FILE=arm-none-eabi.cmake && "
             f"cmake --build {destination}/build")
    print(f"Wrote {destination}: build it with {build}")
    return 0
