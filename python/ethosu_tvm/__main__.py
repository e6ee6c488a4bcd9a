"""`python -m ethosu_tvm` is the same command as `tvmc`."""
from .process import command

command()
