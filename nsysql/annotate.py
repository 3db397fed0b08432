"""`nsysql.annotate(model)`: an NVTX range around each layer's forward and backward, named by module path.

    handle = nsysql.annotate(model)          # or: with nsysql.annotate(model): train()
    ...                                      # forward: `model/layers.3/attn`
    handle.remove()                          # backward: `model/layers.3/attn [backward]`

Forward ranges come from forward pre/post hooks, on the thread that calls the model. Backward ranges open
when the gradient reaches the node that made a module's output and close when the gradients of its inputs
are complete, on the thread that runs the backward (PyTorch's autograd thread on CUDA). They are graph
hooks (`Node.register_prehook` on the nodes that made the outputs, tensor hooks on the inputs), not
`register_full_backward_hook`: full backward hooks wrap a module's inputs and outputs, and PyTorch then
refuses any in-place op on them (`x += y`, `ReLU(inplace=True)`: "Output 0 of BackwardHookFunction is a view
and is being modified inplace"), which would break most CNNs.

NVTX push/pop ranges are a per-thread stack and `range_pop` closes the innermost one, so each thread keeps
its own stack of what this annotation pushed: a range is popped only when it is on top; one that ends while
others are above it closes as soon as they do. A backward range whose inputs need no gradient (an embedding
of token ids, a frozen first layer) has no end event: it closes when the next module outside it starts its
backward, or when the backward pass ends. `nsysql kernels` / `layers` charge the kernels inside a
`... [backward]` range to the layer of the same module's forward range (`docs/annotate.md`).

This module imports torch only when `annotate` is called: `import nsysql` stays light.
"""
from __future__ import annotations

import fnmatch
import threading
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol, Union

if TYPE_CHECKING:
    from torch import nn

BACKWARD_SUFFIX = " [backward]"

# `select`: a predicate on (dotted name, module), or patterns on dotted names, `*` standing for one name or
# index ("layers.*", "layers.*.attn").
Selection = Union[None, str, Iterable[str], Callable[[str, "nn.Module"], bool]]


class NvtxBackend(Protocol):
    """What `annotate` pushes to: `torch.cuda.nvtx` has this shape; tests pass a recorder."""

    def range_push(self, msg: str) -> object: ...

    def range_pop(self) -> object: ...


class _NoNvtx:
    """Without CUDA there is no NVTX to write to: the hooks still run, the ranges go nowhere."""

    def range_push(self, msg: str) -> None:
        return None

    def range_pop(self) -> None:
        return None


@dataclass(eq=False)
class _Range:
    path: str
    backward: bool
    owner: object  # the module call (forward) or (call, graph task) (backward) that closes it
    task: int | None = None
    closed: bool = False

    @property
    def label(self) -> str:
        return self.path + BACKWARD_SUFFIX if self.backward else self.path


def _is_within(path: str, ancestor: str) -> bool:
    return path.startswith(ancestor + "/")


class _ThreadStacks:
    """The ranges this annotation has open, per thread, innermost last."""

    def __init__(self, nvtx: NvtxBackend) -> None:
        self._nvtx = nvtx
        self._stacks: dict[int, list[_Range]] = {}

    def _mine(self) -> list[_Range]:
        return self._stacks.setdefault(threading.get_ident(), [])

    def _push(self, stack: list[_Range], r: _Range) -> None:
        stack.append(r)
        self._nvtx.range_push(r.label)

    def _pop(self, stack: list[_Range]) -> _Range:
        self._nvtx.range_pop()
        return stack.pop()

    def settle(self) -> None:
        """Pop the closed ranges on top of this thread's stack (closed early, or from another thread)."""
        stack = self._mine()
        while stack and stack[-1].closed:
            self._pop(stack)

    def open_forward(self, r: _Range) -> None:
        self.settle()
        self._push(self._mine(), r)

    def open_backward(self, r: _Range) -> None:
        """Backward ranges close late or never (see the module doc): a new one first pops the open backward
        ranges that are not its ancestors. A descendant that started first (a module whose output node it
        shares, e.g. the last layer of a Sequential) is popped and pushed again inside the new range."""
        self.settle()
        stack = self._mine()
        inner: list[_Range] = []
        while stack and stack[-1].backward and not _is_within(r.path, stack[-1].path):
            top = self._pop(stack)
            if _is_within(top.path, r.path) and not top.closed:
                inner.append(top)
        self._push(stack, r)
        for top in reversed(inner):
            self._push(stack, top)

    def close(self, owner: object) -> object | None:
        """Close the innermost open range of `owner` on this thread (popped at once if on top).
        Returns the owner, or None when it has no open range here (never pushed, or already closed)."""
        stack = self._mine()
        for r in reversed(stack):
            if not r.closed and r.owner == owner:
                r.closed = True
                self.settle()
                return r.owner
        return None

    def close_forward(self, path: str) -> object | None:
        """Close the innermost open forward range of `path` on this thread; returns its owner (the call)."""
        for r in reversed(self._mine()):
            if not r.backward and not r.closed and r.path == path:
                return self.close(r.owner)
        return None

    def close_backward(self, task: int) -> None:
        """Backward pass `task` has ended: its ranges close, on this thread now, on others at their next hook."""
        for stack in list(self._stacks.values()):
            for r in list(stack):
                if r.backward and r.task == task:
                    r.closed = True
        self.settle()

    def close_all(self) -> None:
        for stack in list(self._stacks.values()):
            for r in list(stack):
                r.closed = True
        self.settle()

    def open_labels(self) -> dict[int, list[str]]:
        """Per thread id, the labels still pushed, outermost first."""
        return {tid: [r.label for r in stack] for tid, stack in list(self._stacks.items()) if stack}


@dataclass(eq=False)
class _Call:
    """One call of an annotated module: what its backward hooks need."""
    path: str
    inputs: dict[int, Any] = field(default_factory=dict)  # id of each input needing grad -> its grad_fn
    started: set[int] = field(default_factory=set)  # graph tasks in which its backward range opened


def _tensors(tree: object) -> list[Any]:
    """The tensors in nested tuples, lists and dicts (a ModelOutput is a dict). Not torch.utils._pytree: it
    took half of the hooks' time."""
    import torch

    found: list[Any] = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return found


def _output_nodes(output: object, inputs: dict[int, Any]) -> list[Any]:
    """The autograd nodes whose run starts the module's backward: those that made its outputs."""
    nodes: dict[int, Any] = {}
    for t in _tensors(output):
        if not t.requires_grad or t.grad_fn is None:
            continue
        if id(t) in inputs and inputs[id(t)] is t.grad_fn:
            continue  # an input handed back unchanged: no backward of its own here
        nodes.setdefault(id(t.grad_fn), t.grad_fn)
        base = t._base if t._is_view() else None
        if base is not None and base.grad_fn is not None and id(base) not in inputs:
            # an in-place op on a view (`y += x` after a 3-D linear) takes the view's node out of the graph;
            # the base's node stays
            nodes.setdefault(id(base.grad_fn), base.grad_fn)
    return list(nodes.values())


def _when_all_grads(tensors: list[Any], fn: Callable[[], None]) -> None:
    """Call `fn` in each backward pass once the gradients of all `tensors` are computed (never, if one of them
    gets none). Unlike torch.autograd.graph.register_multi_grad_hook it holds no autograd node, so a forward
    without a backward frees its graph at once instead of at the next garbage collection."""
    arrived: dict[int, int] = {}
    expected = len(tensors)  # the hook must not hold the tensors: it lives on their nodes

    def hook(grad: object) -> None:
        task = _graph_task()
        arrived[task] = arrived.get(task, 0) + 1
        if arrived[task] == expected:
            del arrived[task]
            fn()

    for t in tensors:
        t.register_hook(hook)


def _emit_nvtx_active() -> bool:
    """Inside `torch.autograd.profiler.emit_nvtx` PyTorch pushes a range around each autograd node and pops it
    after the node's hooks ran: it would pop a range pushed by a graph hook instead of its own."""
    import torch

    return torch._C._autograd._profiler_type() == torch._C._profiler.ActiveProfilerType.NVTX


def _graph_task() -> int:
    import torch

    return torch._C._current_graph_task_id()


class Annotation:
    """The hooks `annotate` registered. `remove()`, or leaving a `with` block, takes them all away."""

    def __init__(self, named: dict[str, "nn.Module"], nvtx: NvtxBackend, backward: bool) -> None:
        self.paths: tuple[str, ...] = tuple(named)
        self._backward = backward
        self._stacks = _ThreadStacks(nvtx)
        self._active = True
        self._queued_tasks: set[int] = set()
        self._last_nodes = threading.local()  # .nodes: {id(node): (node, calls)} of the latest forward return
        self._handles: list[Any] = []
        for path, module in named.items():
            nested = any(_is_within(path, other) for other in named)
            self._handles.append(module.register_forward_pre_hook(
                self._forward_pre_hook(path), with_kwargs=True))
            # always_call: a forward that raises still closes its range
            self._handles.append(module.register_forward_hook(
                self._forward_hook(path, nested), with_kwargs=True, always_call=True))

    def _skip(self) -> bool:
        import torch

        if not self._active:
            self._stacks.settle()  # graph hooks still in flight after remove(): close what is left here
            return True
        return torch.compiler.is_compiling()  # a range inside compiled code would break its graph

    def _forward_pre_hook(self, path: str) -> Callable[..., None]:
        def hook(module: "nn.Module", args: tuple, kwargs: dict) -> None:
            import torch

            if self._skip():
                return None
            call = _Call(path)
            self._last_nodes.nodes = {}  # another module starts: no output node to share any more
            self._stacks.open_forward(_Range(path, backward=False, owner=call))
            if self._backward and torch.is_grad_enabled():
                inputs = [t for t in _tensors((args, kwargs)) if t.requires_grad]
                call.inputs = {id(t): t.grad_fn for t in inputs}
                # Hooked before the forward runs, so an in-place op on an input does not move the hook. A leaf
                # keeps its hooks for its lifetime: none on leaves (their range closes as described above).
                _when_all_grads([t for t in inputs if t.grad_fn is not None], self._backward_end_hook(call))
            return None
        return hook

    def _forward_hook(self, path: str, nested: bool) -> Callable[..., None]:
        """`nested`: an annotated module encloses this one and may return the same output node."""
        def hook(module: "nn.Module", args: tuple, kwargs: dict, output: object) -> None:
            import torch

            if self._skip():
                return None
            call = self._stacks.close_forward(path)
            if not isinstance(call, _Call) or not self._backward or not torch.is_grad_enabled() \
                    or _emit_nvtx_active():
                return None
            inputs, call.inputs = call.inputs, {}  # the hooks need no tensors of the forward
            last = self._last_nodes.__dict__.setdefault("nodes", {})
            hooked = {}
            for node in _output_nodes(output, inputs):
                if id(node) in last:
                    # the node of a module that just returned inside this one (a Sequential's last child):
                    # one hook opens both, this outer one first
                    calls = last[id(node)][1]
                    calls.insert(0, call)
                else:
                    calls = [call]
                    node.register_prehook(self._backward_start_hook(calls))
                hooked[id(node)] = (node, calls)
            # kept for the enclosing module's hook, which runs next; an outermost module keeps no graph alive
            self._last_nodes.nodes = hooked if nested else {}
            return None
        return hook

    def _backward_start_hook(self, calls: list[_Call]) -> Callable[..., None]:
        """Opens the backward range of each call in `calls` (outermost first) that made this node's output."""
        def hook(grad_outputs: tuple) -> None:
            if self._skip():
                return None
            task = _graph_task()
            if task not in self._queued_tasks:
                import torch

                self._queued_tasks.add(task)
                torch.autograd.Variable._execution_engine.queue_callback(lambda: self._backward_done(task))
            for call in calls:
                if task not in call.started:  # several output nodes: the first to run opens the range
                    call.started.add(task)
                    self._stacks.open_backward(_Range(call.path, backward=True, owner=(call, task), task=task))
            return None
        return hook

    def _backward_end_hook(self, call: _Call) -> Callable[[], None]:
        def hook() -> None:
            if not self._skip():
                self._stacks.close((call, _graph_task()))
        return hook

    def _backward_done(self, task: int) -> None:
        self._queued_tasks.discard(task)
        self._stacks.close_backward(task)

    def open_ranges(self) -> dict[int, list[str]]:
        """Per thread id, the ranges this annotation has pushed and not popped yet, outermost first."""
        return self._stacks.open_labels()

    def remove(self) -> None:
        """Remove every hook; close the ranges still open on this thread (other threads': at their next hook)."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._active = False
        self._stacks.close_all()

    def __enter__(self) -> "Annotation":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def module_paths(model: "nn.Module", root: str) -> dict[str, str]:
    """Dotted name -> range path: `layers.3.attn` -> `model/layers.3/attn`. '/' between modules; an entry of
    a ModuleList or ModuleDict (never called, so never a range itself) stays with it (`layers.3`); the
    `_orig_mod` level of a `torch.compile` wrapper is left out."""
    from torch import nn

    modules = dict(model.named_modules(remove_duplicate=False))  # parents before their children
    paths = {"": root}
    for dotted in modules:
        if not dotted:
            continue
        parent, _, last = dotted.rpartition(".")
        if last == "_orig_mod":
            paths[dotted] = paths[parent]
            continue
        joiner = "." if isinstance(modules[parent], (nn.ModuleList, nn.ModuleDict)) else "/"
        paths[dotted] = paths[parent] + joiner + last
    return paths


def default_layers(model: "nn.Module") -> set[str]:
    """Dotted names of what a user calls layers: the model's children, the children of every ModuleList,
    Sequential or ModuleDict, and their direct submodules. ModuleList/ModuleDict themselves are never called."""
    from torch import nn

    names = {name for name, _ in model.named_children()}
    for dotted, module in model.named_modules():
        if isinstance(module, (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
            for child_name, child in module.named_children():
                child_dotted = f"{dotted}.{child_name}" if dotted else child_name
                names.add(child_dotted)
                names.update(f"{child_dotted}.{name}" for name, _ in child.named_children())
    return names


def _predicate(model: "nn.Module", select: Selection) -> Callable[[str, "nn.Module"], bool]:
    if select is None:
        chosen = default_layers(model)
        return lambda dotted, module: dotted in chosen
    if callable(select):
        return select
    patterns = [pattern.split(".") for pattern in ([select] if isinstance(select, str) else select)]

    def matches(dotted: str, module: "nn.Module") -> bool:
        parts = dotted.split(".")
        return any(len(parts) == len(pattern) and all(map(fnmatch.fnmatchcase, parts, pattern))
                   for pattern in patterns)
    return matches


def _selected(model: "nn.Module", name: str, select: Selection) -> dict[str, "nn.Module"]:
    from torch import nn

    wanted = _predicate(model, select)
    paths = module_paths(model, name)
    named: dict[str, nn.Module] = {}
    for dotted, module in model.named_modules():  # each module once, under its first name
        if isinstance(module, (nn.ModuleList, nn.ModuleDict)) or not wanted(dotted, module):
            continue
        named.setdefault(paths[dotted], module)  # a compile wrapper and its _orig_mod: the wrapper
    return named


def _warn_if_compiled(model: "nn.Module") -> None:
    try:
        from torch._dynamo.eval_frame import OptimizedModule
    except ImportError:  # pragma: no cover - torch without dynamo
        return
    if any(isinstance(m, OptimizedModule) for m in model.modules()):
        warnings.warn("nsysql.annotate: modules inside torch.compile'd code get no ranges; a compiled module's "
                      "own range covers its whole compiled forward and backward (docs/annotate.md)", stacklevel=3)


def annotate(model: "nn.Module", *, name: str = "model", select: Selection = None, backward: bool = True,
             nvtx: NvtxBackend | None = None) -> Annotation:
    """Push an NVTX range named by module path around the forward (`model/layers.3/attn`) and the backward
    (`model/layers.3/attn [backward]`) of the model's layers.

    name: the first segment of every path. select: which modules: by default the model's children, the
    children of ModuleList/Sequential/ModuleDict containers and their direct submodules; else patterns on
    PyTorch's dotted names, `*` standing for one name or index (`["layers.*", "layers.*.attn", "lm_head"]`),
    or a predicate `(dotted_name, module) ->
    bool`. backward: False gives forward ranges only. nvtx: where ranges go (`range_push`/`range_pop`);
    by default `torch.cuda.nvtx`, or nowhere without CUDA. Returns a handle with `remove()`, also a
    context manager.
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"nsysql.annotate needs a torch.nn.Module, got {type(model).__name__}")
    if not name or "/" in name:
        raise ValueError(f"nsysql.annotate: name must be one path segment without '/', got {name!r}")
    _warn_if_compiled(model)
    if nvtx is None:
        nvtx = torch.cuda.nvtx if torch.cuda.is_available() else _NoNvtx()
    return Annotation(_selected(model, name, select), nvtx, backward)
