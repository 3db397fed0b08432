"""NVTX domains: TensorRT's layer ranges are layers, libraries' ranges (NCCL, nvFuser's internals, TensorRT's API
calls, ...) never make steps or layers. No TensorRT or nvFuser capture can be made here: the synthetic export of
scripts/make_synthetic.py library_ranges follows their documented range names; a plain walk of its raw rows
(tests/plainwalk.py, JSON layer names read with json) checks every kernel's layer and direction."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

import nsysql

from conftest import make_synthetic
from plainwalk import PlainAttribution, plain_steps

runner = CliRunner()
TRT_LAYERS = ["conv1 + relu1", "fc1", "Reformatting CopyNode for Output Tensor 0 to fc1"]


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("libraries")
    path = make_synthetic().library_ranges().write(directory / "library_ranges.sqlite")
    with nsysql.open(path, cache_dir=directory / "cache") as ex:
        yield ex, path


def test_library_ranges_make_no_steps(libs):
    """Every top-level name repeats three times, and all are libraries': TensorRT's layers and API call, nvFuser's
    executor, NCCL's calls. None starts a step (without the rule each inference's `conv1 + relu1` would): the
    steps, if any, are the iterations of the GPU op sequence, never a range."""
    ex, path = libs
    steps = ex.steps()
    assert set(steps["source"]) <= {"kernel-pattern", "graph-launch"} and steps["range_id"].null_count() == steps.height
    assert ex.run("analysis.step_candidates").filter("chosen").is_empty()
    assert plain_steps(PlainAttribution(path)) == []


def test_tensorrt_layers_are_layers_and_the_rest_is_not(libs):
    ex, path = libs
    users = ex.sql("SELECT r.text, u.layer, u.from_library, u.is_step FROM user_range AS u "
                   "JOIN nvtx_range AS r USING (range_id) ORDER BY r.range_id")
    assert users["layer"].to_list() == TRT_LAYERS * 3  # the JSON-named layer by its "Name"
    assert users["from_library"].all() and not users["is_step"].any()
    assert users["text"][1].startswith('{"Name": "fc1"')  # NVIDIA's text itself is kept (reports print it)
    layers = {r["layer"]: r for r in ex.layers(analysed=False).iter_rows(named=True)}
    assert set(layers) == set(TRT_LAYERS) | {"?"}
    assert {name: (layers[name]["kernels"], layers[name]["fprop_ns"]) for name in TRT_LAYERS} == {
        "conv1 + relu1": (3, 600), "fc1": (3, 600), "Reformatting CopyNode for Output Tensor 0 to fc1": (3, 90)}
    # nvFuser's kernels: under its ranges only (prepareRuntimeOrder inside KernelExecutor::runFusion): other, '?'
    assert (layers["?"]["kernels"], layers["?"]["fprop_ns"], layers["?"]["total_ns"]) == (3, 0, 180)


def test_every_kernel_against_a_plain_walk(libs):
    """`nsysql kernels`' direction and layer of each GPU op (in GPU start order) as the plain walk finds them."""
    from test_attribution import _rows
    ex, path = libs
    plain = [row[:4] for row in PlainAttribution(path).attribute()]
    assert [row[:4] for row in _rows(ex)] == plain
    assert len(plain) == 12 and plain[3][2:] == ("other", "?")  # nvFuser's first kernel


def test_nvfuser_inner_ranges_are_nvfusers(libs):
    """`prepareRuntimeOrder` has no library's name, but runs inside nvFuser's `KernelExecutor::runFusion`."""
    ex, _ = libs
    flags = dict(ex.sql("SELECT r.text, c.is_user AND NOT c.is_library FROM nvtx_context AS c "
                        "JOIN nvtx_range AS r USING (range_id) WHERE r.domain = ''").iter_rows())
    assert flags == {"FusionExecutorCache::runFusionWithInputs": False, "KernelExecutor::runFusion": False,
                     "prepareRuntimeOrder": False}


def test_a_users_range_named_like_a_cpp_method_stays_the_users():
    """The nvFuser rule names its entry points: a user's own `Trainer::step` in the default domain is a user range."""
    from plainwalk import is_user_range
    assert is_user_range("", "Trainer::step") and not is_user_range("", "KernelExecutor::runFusion")
    assert is_user_range("TensorRT", "conv1 + relu1") and not is_user_range("TensorRT", "ExecutionContext::enqueueV3")
    assert not is_user_range("com.nvidia.nccl.proxy", "Proxy Progress") and not is_user_range("NCCL", "ncclAllReduce")
