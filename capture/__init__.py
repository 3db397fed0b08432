"""Profile the seed models under Nsight Systems with the seed's NVTX ranges.

`python -m capture MODEL ...` runs a workload (needs torch: ``pip install 'nsysql[capture]'``);
`capture.runner` builds and runs the ``nsys profile`` / ``nsys export`` / ``nsys stats``
command lines around it. Importing this package, `capture.runner` or `capture.models` does
not import torch, so the query side of nsysql stays torch-free.
"""
from __future__ import annotations

from capture.models import GPT_SIZES, MODEL_NAMES

__all__ = ["GPT_SIZES", "MODEL_NAMES"]
