"""`python -m ethosu_tvm` is the same command as `tvmc`."""
from .cli import command

command()
