"""NVTX range helpers used by every model and by the workload driver.

`push`/`pop` go to ``torch.cuda.nvtx`` when CUDA is available and are no-ops otherwise.
Everything else here calls them through this module's globals (`module_ranges` too), so a test can
replace `push`, `pop` and `op_ranges` (``monkeypatch.setattr(capture.nvtx, "push", ...)``) and
record the exact names and nesting a workload emits. `silenced` (--no-nvtx) swaps them for
no-ops for a whole run: the same program with no markers at all.
"""
from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, Iterator

_backend: tuple[Callable[[str], object], Callable[[], object]] | None = None


def _noop_push(name: str) -> None:
    return None


def _noop_pop() -> None:
    return None


def _resolve() -> tuple[Callable[[str], object], Callable[[], object]]:
    global _backend
    if _backend is None:
        _backend = (_noop_push, _noop_pop)
        try:
            import torch

            if torch.cuda.is_available():
                _backend = (torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop)
        except ImportError:
            pass
    return _backend


def push(name: str) -> None:
    """Open an NVTX push/pop range called `name` on the calling thread."""
    _resolve()[0](name)


def pop() -> None:
    """Close the innermost range opened by `push` on the calling thread."""
    _resolve()[1]()


@contextlib.contextmanager
def silenced(enabled: bool = True) -> Iterator[None]:
    """While active (when `enabled`), `push` and `pop` are no-ops: every range of the run (the
    workload's, the model's, nsysql.annotate's through `module_ranges`) goes unmarked, as a program
    without NVTX runs. The functions in place before (a test's recorder too) come back at the end."""
    names = globals()
    saved = names["push"], names["pop"]
    if enabled:
        names["push"], names["pop"] = _noop_push, _noop_pop
    try:
        yield
    finally:
        names["push"], names["pop"] = saved


@contextlib.contextmanager
def range(name: str) -> Iterator[None]:  # noqa: A001 - mirrors torch.cuda.nvtx.range
    """``with nvtx.range("layer_0"): ...`` — a push/pop range around the block."""
    push(name)
    try:
        yield
    finally:
        pop()


def op_ranges(enabled: bool) -> ContextManager[object]:
    """Per-operator ranges: ``torch.autograd.profiler.emit_nvtx(record_shapes=True)``.

    Only with CUDA (a CPU-only torch build refuses emit_nvtx); otherwise a no-op context.
    """
    if enabled:
        import torch

        if torch.cuda.is_available():
            return torch.autograd.profiler.emit_nvtx(record_shapes=True)
    return contextlib.nullcontext()


class _ThroughPushPop:
    """nsysql.annotate's NVTX backend: this module's `push`/`pop`, so a test's recorder sees module ranges too."""

    def range_push(self, name: str) -> None:
        push(name)

    def range_pop(self) -> None:
        pop()


def module_ranges(model: object, enabled: bool, backward: bool = True) -> ContextManager[object]:
    """``nsysql.annotate(model)``: a range per layer named by module path, forward and backward
    (`model/layers.3/attn`, `model/layers.3/attn [backward]`; forward only when not `backward`); a
    no-op context when not `enabled`."""
    if not enabled:
        return contextlib.nullcontext()
    from nsysql.annotate import annotate

    return annotate(model, nvtx=_ThroughPushPop(), backward=backward)


def synchronize(device: object) -> None:
    """Wait for the GPU so that a range's end means its kernels are done."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
