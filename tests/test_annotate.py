"""nsysql.annotate on CPU: NVTX ranges per module, forward on the calling thread, backward on the thread that
runs it, recorded by a fake NVTX backend. On CPU the backward runs on the thread that calls it, so each test
runs it on a thread of its own, as PyTorch's autograd thread runs it on CUDA."""
from __future__ import annotations

import importlib
import subprocess
import sys
import threading

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from nsysql.annotate import BACKWARD_SUFFIX, annotate  # noqa: E402

annotate_module = importlib.import_module("nsysql.annotate")  # `nsysql.annotate` is the function

D, VOCAB = 8, 11


class FakeNvtx:
    """range_push/range_pop per thread, as NVTX keeps them; records each push with the range it opened in."""

    def __init__(self) -> None:
        self.stacks: dict[int, list[str]] = {}
        self.pushes: list[tuple[int, str, str | None]] = []  # (thread, label, enclosing label)
        self.pops: dict[int, int] = {}
        self.errors: list[str] = []

    def range_push(self, msg: str) -> None:
        stack = self.stacks.setdefault(threading.get_ident(), [])
        self.pushes.append((threading.get_ident(), msg, stack[-1] if stack else None))
        stack.append(msg)

    def range_pop(self) -> None:
        tid = threading.get_ident()
        stack = self.stacks.setdefault(tid, [])
        if not stack:
            self.errors.append("pop without a push")
            return
        stack.pop()
        self.pops[tid] = self.pops.get(tid, 0) + 1

    def innermost(self) -> str | None:
        stack = self.stacks.get(threading.get_ident())
        return stack[-1] if stack else None

    def labels(self, thread: int) -> list[str]:
        return [label for tid, label, _ in self.pushes if tid == thread]

    def assert_balanced(self) -> None:
        assert not self.errors
        assert all(not stack for stack in self.stacks.values()), self.stacks
        for tid in self.stacks:
            assert self.pops.get(tid, 0) == len(self.labels(tid))


class _Tap(torch.autograd.Function):
    """Identity recording the innermost range where it runs, forward and backward: where a kernel would land."""

    @staticmethod
    def forward(ctx, x, nvtx, tag):
        ctx.nvtx, ctx.tag = nvtx, tag
        nvtx.seen.append((tag, "forward", nvtx.innermost()))
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        ctx.nvtx.seen.append((ctx.tag, "backward", ctx.nvtx.innermost()))
        return grad, None, None


class Probe(nn.Module):
    def __init__(self, nvtx: FakeNvtx, tag: str) -> None:
        super().__init__()
        self.nvtx, self.tag = nvtx, tag

    def forward(self, x):
        return _Tap.apply(x, self.nvtx, self.tag)


class Lookup(nn.Module):
    """An embedding: its input (token ids) needs no grad, so its backward range has no end event."""

    def __init__(self, nvtx: FakeNvtx) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(VOCAB, D))
        self.nvtx = nvtx

    def forward(self, ids):
        return _Tap.apply(self.weight[ids], self.nvtx, "lookup")


class Block(nn.Module):
    def __init__(self, nvtx: FakeNvtx, i: int) -> None:
        super().__init__()
        self.nvtx, self.i = nvtx, i
        self.norm = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.ReLU(inplace=True), Probe(nvtx, f"mlp{i}"),
                                 nn.Linear(2 * D, D))

    def forward(self, x):
        h = _Tap.apply(self.norm(x), self.nvtx, f"block{self.i}")
        y = self.mlp(h)
        y += x  # in-place on a hooked module's output (full backward hooks refuse this)
        return y


class Net(nn.Module):
    def __init__(self, nvtx: FakeNvtx) -> None:
        super().__init__()
        self.embed = Lookup(nvtx)
        self.blocks = nn.ModuleList(Block(nvtx, i) for i in range(2))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


@pytest.fixture
def nvtx() -> FakeNvtx:
    fake = FakeNvtx()
    fake.seen = []
    return fake


def ids() -> torch.Tensor:
    return torch.randint(0, VOCAB, (3, 5), generator=torch.Generator().manual_seed(0))


def backward_on_a_thread(loss: torch.Tensor) -> int:
    """loss.backward() on another thread, as on CUDA; returns that thread's id."""
    errors = []

    def run() -> None:
        try:
            loss.backward()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not errors, errors
    return thread.ident


def enclosing_path(path: str, paths) -> str | None:
    """The nearest annotated ancestor of `path`: where its range must open."""
    ancestors = [p for p in paths if path.startswith(p + "/")]
    return max(ancestors, key=len) if ancestors else None


def test_default_selection_and_names(nvtx):
    handle = annotate(Net(nvtx), nvtx=nvtx)
    assert handle.paths == (
        "model/embed", "model/blocks.0", "model/blocks.0/norm", "model/blocks.0/mlp", "model/blocks.0/mlp/0",
        "model/blocks.0/mlp/1", "model/blocks.0/mlp/2", "model/blocks.0/mlp/3", "model/blocks.1",
        "model/blocks.1/norm", "model/blocks.1/mlp", "model/blocks.1/mlp/0", "model/blocks.1/mlp/1",
        "model/blocks.1/mlp/2", "model/blocks.1/mlp/3", "model/head")


def test_forward_and_backward_ranges_nest_on_their_threads(nvtx):
    net = Net(nvtx)
    handle = annotate(net, nvtx=nvtx)
    loss = net(ids()).sum()
    autograd = backward_on_a_thread(loss)
    main = threading.get_ident()
    nvtx.assert_balanced()
    assert handle.open_ranges() == {}

    forward, backward = nvtx.labels(main), nvtx.labels(autograd)
    assert forward == list(handle.paths)  # each module once, in call order (the model's order here)
    assert sorted(backward) == sorted(p + BACKWARD_SUFFIX for p in handle.paths)
    assert backward.index("model/blocks.1" + BACKWARD_SUFFIX) < backward.index("model/blocks.0" + BACKWARD_SUFFIX)
    for tid, label, parent in nvtx.pushes:
        path = label.removesuffix(BACKWARD_SUFFIX)
        want = enclosing_path(path, handle.paths)
        if tid == autograd and want is not None:
            want += BACKWARD_SUFFIX
        assert parent == want, (label, parent)

    # where the ops of each module run: inside its own range, forward and backward
    seen = {(tag, direction): where for tag, direction, where in nvtx.seen}
    assert seen[("block0", "forward")] == "model/blocks.0"
    assert seen[("block0", "backward")] == "model/blocks.0" + BACKWARD_SUFFIX  # after mlp's range closed
    assert seen[("mlp1", "backward")] == "model/blocks.1/mlp/2" + BACKWARD_SUFFIX
    assert seen[("lookup", "backward")] == "model/embed" + BACKWARD_SUFFIX  # ids need no grad: still open


def test_inputs_without_grad_keep_the_stacks_balanced_step_after_step(nvtx):
    net = Net(nvtx)
    frozen = nn.Linear(D, D).requires_grad_(False)
    model = nn.Sequential(frozen, nn.Linear(D, D))  # the frozen layer's input and output need no grad
    annotate(net, nvtx=nvtx)
    annotate(model, name="side", nvtx=nvtx)
    for _ in range(3):
        loss = net(ids()).sum() + model(torch.randn(2, D)).sum()
        autograd = backward_on_a_thread(loss)
        nvtx.assert_balanced()
    backward = nvtx.labels(autograd)
    assert "side/1" + BACKWARD_SUFFIX in backward
    assert "side/0" + BACKWARD_SUFFIX not in backward  # no gradient flows through it: no range
    assert nvtx.labels(threading.get_ident()).count("side/0") == 3


def test_shared_module_called_twice(nvtx):
    shared = nn.Linear(D, D)

    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(shared, nn.Tanh())

        def forward(self, x):
            return self.inner(self.inner(x))

    model = Twice()
    annotate(model, select=["inner", "inner.*"], nvtx=nvtx)
    autograd = backward_on_a_thread(model(torch.randn(2, D, requires_grad=True) * 1).sum())
    nvtx.assert_balanced()
    assert nvtx.labels(threading.get_ident()) == ["model/inner", "model/inner/0", "model/inner/1"] * 2
    assert nvtx.labels(autograd) == [f"model/inner{s}{BACKWARD_SUFFIX}" for s in ("", "/1", "/0")] * 2
    top_level = [label for tid, label, parent in nvtx.pushes if tid == autograd and parent is None]
    assert top_level == ["model/inner" + BACKWARD_SUFFIX] * 2  # the second call's backward is not inside the first's


def test_forward_that_raises_closes_its_ranges(nvtx):
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    model = nn.Sequential(nn.Linear(D, D), nn.Sequential(Boom()))
    annotate(model, nvtx=nvtx)
    with pytest.raises(ValueError, match="boom"):
        model(torch.randn(2, D))
    nvtx.assert_balanced()
    assert nvtx.labels(threading.get_ident()) == ["model/0", "model/1", "model/1/0"]


def test_remove_takes_every_hook_away(nvtx):
    net = Net(nvtx)
    with annotate(net, nvtx=nvtx):
        out = net(ids())  # its graph carries backward hooks...
    pushed = len(nvtx.pushes)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in net.modules())
    backward_on_a_thread(out.sum())  # ...which do nothing after remove()
    net(ids())
    assert len(nvtx.pushes) == pushed
    nvtx.assert_balanced()


def test_select_by_patterns_or_predicate(nvtx):
    net = Net(nvtx)
    assert annotate(net, select="blocks.*", nvtx=nvtx).paths == ("model/blocks.0", "model/blocks.1")
    picked = annotate(net, name="gpt", nvtx=nvtx,
                      select=lambda name, module: isinstance(module, nn.Linear) and name.startswith("blocks.1"))
    assert picked.paths == ("gpt/blocks.1/mlp/0", "gpt/blocks.1/mlp/3")
    with pytest.raises(ValueError, match="one path segment"):
        annotate(net, name="a/b", nvtx=nvtx)


def test_under_emit_nvtx_only_forward_ranges(nvtx, monkeypatch):
    """emit_nvtx pops ranges pushed inside autograd nodes: backward ranges would be mis-nested."""
    monkeypatch.setattr(annotate_module, "_emit_nvtx_active", lambda: True)
    net = Net(nvtx)
    handle = annotate(net, nvtx=nvtx)
    autograd = backward_on_a_thread(net(ids()).sum())
    nvtx.assert_balanced()
    assert nvtx.labels(autograd) == []
    assert nvtx.labels(threading.get_ident()) == list(handle.paths)


def test_no_grad_forward_registers_no_backward_hooks(nvtx):
    net = Net(nvtx)
    handle = annotate(net, nvtx=nvtx)
    with torch.no_grad():
        out = net(ids())
    assert out.grad_fn is None
    nvtx.assert_balanced()
    assert nvtx.labels(threading.get_ident()) == list(handle.paths)


def test_import_nsysql_stays_light():
    code = ("import sys, nsysql; from nsysql.annotate import Annotation; "
            "assert callable(nsysql.annotate); "
            "print(sorted(m for m in ('torch', 'duckdb', 'polars') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
