"""The NPU's constraint checks, one module per operator family; :mod:`..constraints` is their table."""
