"""``nsysql steps EXPORT``: training/inference iterations with their GPU time."""
from __future__ import annotations

import typer

from ..formats import Format
from .common import (CacheDirOpt, DebugOpt, ExportArg, FormatOpt, NoCacheOpt, OutputOpt, open_export,
                     user_errors)


def steps(
    export: ExportArg,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Steps (iterations): wall time, GPU busy time, fprop/bprop/optimizer split, kernels.

    Steps are the top-level NVTX ranges named like profiled_step, step_N, ProfilerStep#N or iteration N; without any, each repetition of the first repeating top-level range (forward_pass, backward_pass, ..., forward_pass) starts one.

    A step's GPU work includes ops launched by other threads of its process while it runs (PyTorch's autograd thread).
    """
    from .. import catalog
    from ..errors import NsysqlError
    from ..render import emit
    with user_errors(debug):
        with open_export(export, cache_dir, no_cache) as ex:
            df = ex.steps()
            if df.is_empty():
                raise NsysqlError(f"{export.name} has no steps: name each iteration's top-level NVTX range like "
                                  "step_N or profiled_step, or repeat the same top-level ranges every iteration")
            q = catalog.get("analysis.steps")
            emit(df, fmt, decimals={c.name: c.decimals for c in q.columns if c.decimals is not None},
                 output=output, title="Steps")


def register(app: typer.Typer) -> None:
    app.command("steps")(steps)
