"""In-process use of the myops operators: ``import myops`` registers ``torch.ops.myops``.

The shared library ``libmyops.so`` sits next to this file in a build tree
(``<build>/python/myops``); ``MYOPS_LIBRARY`` overrides its path.
"""

import os
import pathlib

import torch

_LIBRARY = pathlib.Path(os.environ.get("MYOPS_LIBRARY", pathlib.Path(__file__).with_name("libmyops.so")))
if not _LIBRARY.exists():
    raise ImportError(f"myops: shared library not found at {_LIBRARY}; build the project or set MYOPS_LIBRARY")
torch.ops.load_library(str(_LIBRARY))

scale_shift = torch.ops.myops.scale_shift
scale_shift_ = torch.ops.myops.scale_shift_
scale_shift_out = torch.ops.myops.scale_shift.out

__all__ = ["scale_shift", "scale_shift_", "scale_shift_out"]
