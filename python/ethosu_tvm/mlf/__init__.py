"""Model Library Format (version 7) tarballs: what a firmware project links."""
from .export import MLF_VERSION, IOTensor, MlfError, MlfModule, export_model_library_format, metadata

__all__ = ["MLF_VERSION", "IOTensor", "MlfError", "MlfModule", "export_model_library_format", "metadata"]
