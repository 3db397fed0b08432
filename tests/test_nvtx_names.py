"""NVTX texts are stored once per name (nvtx_name) and ranges as integers (nvtx_node), which the build's NVTX
statements read; nvtx_range joins them with the columns it always had, and the per-name flags say what the
per-range rules say."""
from __future__ import annotations

import nsysql

from conftest import make_synthetic

synth = make_synthetic()


def test_ranges_are_stored_as_integers_and_names_once(opened):
    con = opened["gpt-tiny-train-fp32"].con
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables "
                             "WHERE table_name IN ('nvtx_range', 'nvtx_node', 'nvtx_name')").fetchall())
    assert kinds == {"nvtx_range": "VIEW", "nvtx_node": "BASE TABLE", "nvtx_name": "BASE TABLE"}  # no text per range
    node_types = {t for _, t in con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                            "WHERE table_name = 'nvtx_node'").fetchall()}
    assert "VARCHAR" not in node_types  # no per-range text
    names, distinct = con.execute("SELECT count(*), count(DISTINCT (pid, domain_key, push_pop, text)) "
                                  "FROM nvtx_name").fetchone()
    assert names == distinct and names < con.execute("SELECT count(*) FROM nvtx_node").fetchone()[0]


def test_name_flags_match_the_rules_per_range(opened):
    """nvtx_name decides once per text what nvtx_range.is_op_marker and nvtx_context's kinds decide per range."""
    for ex in opened.values():
        wrong = ex.con.execute("""
            SELECT count(*) FROM nvtx_range AS r JOIN nvtx_node USING (range_id) JOIN nvtx_name AS n USING (name_id)
            WHERE r.is_op_marker IS DISTINCT FROM (contains(r.text, ', op_id = ') OR contains(r.text, ', seq = ')
                    OR starts_with(r.text, 'autograd::engine::evaluate_function: ')
                    OR starts_with(r.text, 'Optimizer.step#') OR starts_with(r.text, 'Optimizer.zero_grad#'))
               OR n.is_user IS DISTINCT FROM (NOT r.is_op_marker AND (
                    (r.domain NOT IN ('CCCL', 'NCCL', 'cuBLAS', 'cuBLASLt', 'cuDNN', 'cuFFT', 'cuSPARSE', 'cuSOLVER',
                                      'NVSHMEM', 'TensorRT', 'CUTLASS', 'nvFuser')
                     AND NOT starts_with(r.domain, 'com.nvidia.nccl')
                     AND NOT (r.domain = '' AND regexp_matches(r.text, '^(nvfuser|FusionExecutorCache|'
                              || 'FusionKernelRuntime|KernelExecutor|FusionExecutor|ExecutorDispatch|FusionDefinition)::')))
                    OR (r.domain = 'TensorRT' AND NOT regexp_matches(r.text, '^[A-Za-z_][A-Za-z0-9_]*::'))))
               OR r.range_name <> r.domain || ':' || r.text
        """).fetchone()[0]
        assert wrong == 0


def test_same_text_in_other_domains_processes_and_styles(tmp_path):
    """One text, four names: default domain, a library domain, another process whose domain 1 is another
    domain, and a start/end range; each range keeps its own domain, style and user-range verdict."""
    s = synth.SyntheticExport().process(100, "train").process(200, "worker")
    s.thread(100, 100, "main").thread(200, 200, "main")
    s.domain("NCCL", 10, pid=100)      # domainId 1 in process 100
    s.domain("mylib", 10, pid=200)     # domainId 1 in process 200 too
    ids = {
        "default": s.range("allreduce", 100, 200, tid=100, pid=100),
        "nccl": s.range("allreduce", 300, 400, tid=100, pid=100, domain="NCCL"),
        "other_process": s.range("allreduce", 100, 200, tid=200, pid=200, domain="mylib"),
        "startend": s.range("allreduce", 500, 600, tid=100, pid=100, style="StartEnd"),
        "registered": s.range("allreduce", 700, 800, tid=100, pid=100, registered=True),
    }
    ex = nsysql.open(s.write(tmp_path / "names.sqlite"), cache_dir=tmp_path / "cache")
    got = {r[0]: r[1:] for r in ex.con.execute(
        "SELECT r.range_id, r.range_name, r.domain, r.style, x.is_user FROM nvtx_range AS r "
        "JOIN nvtx_context AS x USING (range_id)").fetchall()}
    assert got[ids["default"]] == (":allreduce", "", "PushPop", True)
    assert got[ids["nccl"]] == ("NCCL:allreduce", "NCCL", "PushPop", False)  # a library range: not the user's
    assert got[ids["other_process"]] == ("mylib:allreduce", "mylib", "PushPop", True)
    assert got[ids["startend"]] == (":allreduce", "", "StartEnd", True)
    assert got[ids["registered"]] == (":allreduce", "", "PushPop", True)  # StringIds text: the same name
    assert ex.con.execute("SELECT count(*) FROM nvtx_name").fetchone()[0] == 4
