"""`python -m ethosu_tvm` is the same command as `tvmc`."""
import sys

from .cli import main

sys.exit(main())
