"""nccl_payload: the communicator, message size, ranks, rank, root/peer and reduction of NCCL's NVTX ranges, decoded
from NVTX_EVENTS.binaryData (`nsys export --include-blobs=true`) by the payload schema tables.

Always run: synthetic exports (scripts/make_synthetic.py plus payload schema tables and blobs made here) with
hand-worked values: offsets given and offsets left to natural alignment, signed and 64-bit unsigned values, an enum
value with and without a name, an unknown schema, a truncated blob, a payload shorter than its schema, a schema two
processes registered differently, ranges outside NCCL's domain, blobs without schema tables; old exports.
When ../shared/samples/ddp-2gpu is there (never committed): the real 2-GPU DDP run exported with blobs, every value
against a plain struct.unpack decode of the blob by offsets read from the schema tables here; the default export of
the same run and another run's give no rows.
"""
from __future__ import annotations

import sqlite3
import struct
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import load_script, make_synthetic, opened_each, unxz

REPO = Path(__file__).resolve().parents[1]
DDP = REPO.parent / "shared" / "samples" / "ddp-2gpu"
needs_ddp = pytest.mark.skipif(not (DDP / "formats" / "export-include-blobs.sqlite.xz").exists(),
                               reason="../shared/samples/ddp-2gpu is not here")

COLUMNS = ["range_id", "schema_id", "comm_id", "message_bytes", "ranks", "rank", "root_rank", "peer_rank", "reduction",
           "cuda_device"]
# NCCL's entry names (nvtx_payload_schemas.h) -> the column
NAMED = {"NCCL communicator ID": "comm_id", "Message size [bytes]": "message_bytes", "No. of ranks": "ranks",
         "Rank": "rank", "Root": "root_rank", "Peer rank": "peer_rank", "Reduction operation": "reduction",
         "CUDA device": "cuda_device"}
# NVTX_PAYLOAD_ENTRY_TYPE_* (nvToolsExtPayload.h) as struct formats, LP64: CHAR .. ULONGLONG, INT8 .. UINT64, SIZE
STRUCT_OF_TYPE = {1: "b", 2: "B", 3: "h", 4: "H", 5: "i", 6: "I", 7: "q", 8: "Q", 9: "q", 10: "Q", 11: "b", 12: "B",
                  13: "h", 14: "H", 15: "i", 16: "I", 17: "q", 18: "Q", 22: "Q", 23: "Q"}
UNSIGNED_OF_SIZE = {1: "B", 2: "H", 4: "I", 8: "Q"}
RANGE_TYPES = (59, 60, 70, 71)

# the payload tables as nsys 2025.3 writes them (sqlite_master of the ddp-2gpu export, comments dropped)
SCHEMA_DDL = [
    "CREATE TABLE NVTX_PAYLOAD_SCHEMAS (domainId INTEGER, schemaId INTEGER, name TEXT, type INTEGER, flags INTEGER, "
    "numEntries INTEGER, payloadSize INTEGER, alignTo INTEGER)",
    "CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL, idx INTEGER NOT "
    "NULL, flags INTEGER, type INTEGER, name TEXT, description TEXT, arrayOrUnionDetail INTEGER, offset INTEGER)",
    "CREATE TABLE NVTX_PAYLOAD_ENUMS (domainId INTEGER, schemaId INTEGER, name TEXT, numEntries INTEGER, size INTEGER)",
    "CREATE TABLE NVTX_PAYLOAD_ENUM_ENTRIES (domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL, idx INTEGER NOT "
    "NULL, name TEXT, value INTEGER, isFlag INTEGER)",
]


def table(ex) -> dict[int, dict]:
    """nccl_payload's rows by range id."""
    return {r["range_id"]: r for r in ex.sql("SELECT * FROM nccl_payload").to_dicts()}


# -- a plain decode, for the real export ------------------------------------------------------------------------
def plain_decode(path: Path) -> dict[int, dict]:
    """Every NCCL range's payload, read with struct.unpack from the blob at the offsets the schema tables give: the
    blob is a payload count, that many (schema id, size, offset) descriptors, then the data; the first payload is
    read. An entry after the first without an offset goes to the next offset of its natural alignment."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        domains = {((gtid >> 24) & 0xFFFFFF, dom): text for gtid, dom, text in con.execute(
            "SELECT globalTid, domainId, text FROM NVTX_EVENTS WHERE eventType = 75")}
        layouts: dict[tuple, set] = defaultdict(set)
        for dom, sid, idx, flags, typ, name, offset in con.execute(
                'SELECT domainId, schemaId, idx, flags, type, name, "offset" FROM NVTX_PAYLOAD_SCHEMA_ENTRIES'):
            layouts[(dom, sid)].add((idx, flags or 0, typ, name, offset or 0))
        enum_size = {(d, s): size for d, s, size in con.execute("SELECT domainId, schemaId, size FROM NVTX_PAYLOAD_ENUMS")}
        enum_name = {(d, s, v or 0): n for d, s, v, n in con.execute(
            "SELECT domainId, schemaId, value, name FROM NVTX_PAYLOAD_ENUM_ENTRIES")}
        rows = con.execute("SELECT rowid, globalTid, domainId, eventType, binaryData FROM NVTX_EVENTS "
                           "WHERE binaryData IS NOT NULL").fetchall()
    finally:
        con.close()
    out = {}
    for rowid, gtid, dom, event_type, data in rows:
        if domains.get(((gtid >> 24) & 0xFFFFFF, dom)) != "NCCL" or event_type not in RANGE_TYPES:
            continue
        data = bytes(data)
        row = dict.fromkeys(COLUMNS)
        row["range_id"] = rowid
        (count,) = struct.unpack_from("<Q", data, 0)
        schema, size, at = struct.unpack_from("<QQQ", data, 8)
        row["schema_id"] = schema
        assert count >= 1 and at + size <= len(data)
        entries = sorted(layouts.get((dom, schema), ()))
        assert len(entries) == len({e[0] for e in entries}), "the sample has no conflicting registrations"
        end = 0
        for idx, flags, typ, name, offset in entries:
            assert flags == 0
            fmt = STRUCT_OF_TYPE.get(typ) or UNSIGNED_OF_SIZE[enum_size[(dom, typ)]]
            width = struct.calcsize(fmt)
            pos = offset if offset or idx == 0 else -(-end // width) * width
            end = pos + width
            if name in NAMED and pos + width <= size:
                (value,) = struct.unpack_from("<" + fmt, data, at + pos)
                if name == "Reduction operation":
                    value = enum_name.get((dom, typ, value), str(value))
                row[NAMED[name]] = value
        out[rowid] = row
    return out


@pytest.fixture(scope="module")
def ddp(tmp_path_factory) -> dict[str, Path]:
    if not (DDP / "formats" / "export-include-blobs.sqlite.xz").exists():
        pytest.skip("../shared/samples/ddp-2gpu is not here")
    out = tmp_path_factory.mktemp("ddp")
    return {"blobs": unxz(DDP / "formats" / "export-include-blobs.sqlite.xz", out / "blobs.sqlite"),
            "default": unxz(DDP / "formats" / "export.sqlite.xz", out / "default.sqlite"),
            "torchrun": unxz(DDP / "torchrun" / "export.sqlite.xz", out / "torchrun.sqlite")}


@pytest.fixture(scope="module")
def ddp_opened(ddp, tmp_path_factory):
    with opened_each(ddp, tmp_path_factory.mktemp("ddp-cache")) as handles:
        yield handles


@needs_ddp
def test_every_value_equals_a_plain_decode(ddp, ddp_opened):
    got, want = table(ddp_opened["blobs"]), plain_decode(ddp["blobs"])
    assert len(want) == 162  # every NCCL range of the run has a payload (2 ranks: 71 all-reduces each, ...)
    assert got == want
    assert ddp_opened["blobs"].sql("SELECT count(*) AS n FROM nvtx_range WHERE domain = 'NCCL'")["n"][0] == len(got)


@needs_ddp
def test_payloads_from_parquet_and_arrow_equal_a_plain_decode(ddp, tmp_path):
    """The same blobs read from Parquet and Arrow folders (nsysql/store/formats_in.py): the export with blobs written as
    a parquetdir (bench/parquetdir_of.py: binaryData as bytes), as an arrowdir of IPC streams written here with
    Polars, and as that arrowdir with binaryData declared text, as nsys 2025.3 writes it (on the GPU machine its
    arrowdir's NVTX_EVENTS.arrow held the same 162 payloads as its SQLite export, byte for byte); nccl_payload
    equals the plain decode of the SQLite export's blobs."""
    import shutil

    import polars as pl

    import nsysql
    from nsysql.store import formats_in
    parquetdir = tmp_path / "run_pqtdir"
    load_script("bench/parquetdir_of.py").convert(ddp["blobs"], parquetdir)
    arrowdir = tmp_path / "run_arwdir"
    arrowdir.mkdir()
    for file in parquetdir.iterdir():
        # the oldest layout: LargeUtf8 and LargeBinary, as nsys writes them (no views)
        pl.read_parquet(file).write_ipc_stream(arrowdir / f"{file.stem}.arrow", compat_level=pl.CompatLevel.oldest())
    # as nsys 2025.3 writes it: binaryData declared text (Arrow type LargeUtf8) over bytes that are not UTF-8, which
    # Polars refuses; nsysql reads that column's bytes itself (formats_in.text_column_bytes)
    as_text = tmp_path / "run_arwdir_text"
    shutil.copytree(arrowdir, as_text)
    stream = bytearray((as_text / "NVTX_EVENTS.arrow").read_bytes())
    message = bytes(stream[8:8 + formats_in._u32(stream, 4)])
    schema = formats_in._ref(message, formats_in._u32(message, 0), 2)
    field = next(f for f in formats_in._vector(message, formats_in._ref(message, schema, 1))
                 if formats_in._string(message, formats_in._ref(message, f, 0)) == "binaryData")
    kind_at = formats_in._slot(message, field, 2)
    assert message[kind_at] == 19  # LargeBinary, as Polars wrote it
    stream[8 + kind_at] = 20  # LargeUtf8, nsys's type for it
    (as_text / "NVTX_EVENTS.arrow").write_bytes(bytes(stream))
    with pytest.raises(pl.exceptions.ComputeError, match="utf"):
        pl.read_ipc_stream(as_text / "NVTX_EVENTS.arrow")
    want = plain_decode(ddp["blobs"])
    for folder in (parquetdir, arrowdir, as_text):
        with nsysql.open(folder, cache_dir=tmp_path / "cache") as ex:
            assert table(ex) == want, folder.name


@needs_ddp
def test_one_communicator_shared_by_both_ranks(ddp_opened):
    """DDP's one process group is one communicator: ranks 0 and 1 (one process each) have the same communicator id,
    and run its collectives in the same order with the same sizes."""
    rows = ddp_opened["blobs"].sql(
        "SELECT r.pid, r.text, p.* FROM nccl_payload AS p JOIN nvtx_range AS r USING (range_id) "
        "ORDER BY r.start_ns").to_dicts()
    inits = [r for r in rows if r["text"] == "ncclCommInitRankConfig"]
    assert sorted((r["rank"], r["ranks"], r["cuda_device"]) for r in inits) == [(0, 2, 0), (1, 2, 1)]
    pid_of_rank = {r["rank"]: r["pid"] for r in inits}
    assert len(set(pid_of_rank.values())) == 2
    comms = {rank: {r["comm_id"] for r in rows if r["pid"] == pid} for rank, pid in pid_of_rank.items()}
    assert comms[0] == comms[1] == {inits[0]["comm_id"]} and None not in comms[0]
    calls = {rank: [(r["text"], r["message_bytes"], r["root_rank"], r["reduction"]) for r in rows if r["pid"] == pid]
             for rank, pid in pid_of_rank.items()}
    assert calls[0] == calls[1]


@needs_ddp
def test_all_reduce_sizes(ddp_opened):
    rows = ddp_opened["blobs"].sql(
        "SELECT p.* FROM nccl_payload AS p JOIN nvtx_range AS r USING (range_id) WHERE r.text = 'ncclAllReduce'"
    ).to_dicts()
    assert len(rows) == 142
    assert all(r["message_bytes"] > 0 and r["reduction"] == "Sum" and r["root_rank"] is None for r in rows)
    assert {r["schema_id"] for r in rows} == {16777221}


@needs_ddp
def test_exports_without_blobs_have_no_rows(ddp_opened):
    for name in ("default", "torchrun"):
        ex = ddp_opened[name]
        assert ex.sql("SELECT count(*) AS n FROM nccl_payload")["n"][0] == 0
        assert ex.sql("SELECT count(*) AS n FROM nvtx_range WHERE domain = 'NCCL'")["n"][0] > 0


# -- synthetic exports -------------------------------------------------------------------------------------------
ALL_REDUCE, BY_ALIGNMENT, TWICE, UNKNOWN, REDOP = 16777221, 16777300, 16777301, 16777999, 16777236
P, T = 100, 100


def blob(*payloads: tuple[int, bytes], count: int | None = None) -> bytes:
    """NVTX's payload array as nsys writes it: count, (schema id, size, offset in the blob) each, then the data."""
    n = len(payloads)
    head, data = struct.pack("<Q", n if count is None else count), b""
    for schema, payload in payloads:
        head += struct.pack("<QQQ", schema, len(payload), 8 + 24 * n + len(data))
        data += payload
    return head + data


def all_reduce(comm: int, nbytes: int, op: int) -> bytes:
    return struct.pack("<QQi", comm, nbytes, op) + b"\xbe\x7f\x00\x00"  # the padding holds garbage, as NCCL's does


def by_alignment(rank: int, comm: int, root: int, peer: int) -> bytes:
    """uint8 at 0, uint64 at 8, int16 at 16, int32 at 20: what natural alignment gives."""
    return struct.pack("<B7xQhxxi", rank, comm, root, peer)


def payload_export(path: Path, *, schema_tables: bool = True) -> tuple[Path, dict[str, int]]:
    """Ranges on one thread of pid 100, with blobs; returns the file and the range id of each case."""
    b = make_synthetic().SyntheticExport()
    b.thread(P, T, "python3")
    b.domain("NCCL", 10, pid=P, tid=T)   # domain 1
    b.domain("CCCL", 11, pid=P, tid=T)   # domain 2
    cases = {
        "max": (blob((ALL_REDUCE, all_reduce(0xFEDCBA9876543210, 1 << 33, 2))), "NCCL"),
        "sum": (blob((ALL_REDUCE, all_reduce(7, 4096, 0))), "NCCL"),
        "unnamed_op": (blob((ALL_REDUCE, all_reduce(7, 4096, 9))), "NCCL"),
        "aligned": (blob((BY_ALIGNMENT, by_alignment(3, 42, -2, -1))), "NCCL"),
        "unknown": (blob((UNKNOWN, all_reduce(7, 4096, 0))), "NCCL"),
        "truncated": (blob((ALL_REDUCE, all_reduce(7, 4096, 0)))[:20], "NCCL"),
        "short": (blob((ALL_REDUCE, all_reduce(7, 4096, 0)[:8])), "NCCL"),
        "twice": (blob((TWICE, all_reduce(7, 4096, 0))), "NCCL"),
        "two_payloads": (blob((ALL_REDUCE, all_reduce(5, 64, 2)), (BY_ALIGNMENT, by_alignment(1, 6, 0, 0))), "NCCL"),
        "no_payloads": (blob(count=0), "NCCL"),
        "claims_more": (blob((ALL_REDUCE, all_reduce(7, 4096, 0)), count=1000), "NCCL"),
        "cccl": (blob((ALL_REDUCE, all_reduce(7, 4096, 0))), "CCCL"),
        "no_blob": (None, "NCCL"),
    }
    ids = {}
    for i, (case, (data, domain)) in enumerate(cases.items()):
        ids[case] = b.range("ncclAllReduce", 1000 * (i + 1), 1000 * (i + 1) + 500, pid=P, tid=T, domain=domain)
        b.rows["NVTX_EVENTS"][ids[case] - 1]["binaryData"] = data
    b.write(path)
    if schema_tables:
        con = sqlite3.connect(path)
        try:
            for ddl in SCHEMA_DDL:
                con.execute(ddl)
            # nsys writes 0 as NULL (offset 0, enum value 0); each process's registrations once per process: here
            # the same ones twice, and TWICE registered differently by the two copies
            for _ in range(2):
                con.executemany("INSERT INTO NVTX_PAYLOAD_SCHEMAS VALUES (1, ?, NULL, 1, NULL, ?, ?, NULL)",
                                [(ALL_REDUCE, 3, 24), (BY_ALIGNMENT, 4, 24), (TWICE, 3, 24)])
                con.executemany("INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, ?, ?, NULL, ?, ?, NULL, NULL, ?)", [
                    (ALL_REDUCE, 0, 18, "NCCL communicator ID", None),
                    (ALL_REDUCE, 1, 22, "Message size [bytes]", 8),
                    (ALL_REDUCE, 2, REDOP, "Reduction operation", 16),
                    (BY_ALIGNMENT, 0, 12, "Rank", None),
                    (BY_ALIGNMENT, 1, 18, "NCCL communicator ID", None),
                    (BY_ALIGNMENT, 2, 13, "Root", None),
                    (BY_ALIGNMENT, 3, 5, "Peer rank", None),
                    (TWICE, 1, 22, "Message size [bytes]", 8),
                    (TWICE, 2, REDOP, "Reduction operation", 16),
                ])
                con.execute("INSERT INTO NVTX_PAYLOAD_ENUMS VALUES (1, ?, NULL, 5, 4)", (REDOP,))
                con.executemany("INSERT INTO NVTX_PAYLOAD_ENUM_ENTRIES VALUES (1, ?, ?, ?, ?, NULL)",
                                [(REDOP, i, name, i or None) for i, name in enumerate(["Sum", "Product", "Max"])])
            con.executemany("INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES (1, ?, 0, NULL, ?, ?, NULL, NULL, NULL)",
                            [(TWICE, 18, "NCCL communicator ID"), (TWICE, 17, "NCCL communicator ID")])
            con.commit()
        finally:
            con.close()
    return path, ids


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nccl-payload")
    with_tables, ids = payload_export(directory / "payloads.sqlite")
    without, _ = payload_export(directory / "no_schemas.sqlite", schema_tables=False)
    with opened_each({"with": with_tables, "without": without}, directory / "cache") as handles:
        yield handles, ids


def test_decoded_by_the_schema(synthetic):
    handles, ids = synthetic
    got = table(handles["with"])
    nothing = dict.fromkeys(COLUMNS[2:])

    def row(case, schema, **values):
        return {"range_id": ids[case], "schema_id": schema, **nothing, **values}

    assert got[ids["max"]] == row("max", ALL_REDUCE, comm_id=0xFEDCBA9876543210, message_bytes=1 << 33,
                                  reduction="Max")
    assert got[ids["sum"]] == row("sum", ALL_REDUCE, comm_id=7, message_bytes=4096, reduction="Sum")  # value NULL
    assert got[ids["unnamed_op"]] == row("unnamed_op", ALL_REDUCE, comm_id=7, message_bytes=4096, reduction="9")
    # offsets left out: natural alignment; int16 and int32 read signed
    assert got[ids["aligned"]] == row("aligned", BY_ALIGNMENT, comm_id=42, rank=3, root_rank=-2, peer_rank=-1)
    assert got[ids["unknown"]] == row("unknown", UNKNOWN)
    assert got[ids["truncated"]] == row("truncated", ALL_REDUCE)  # the schema id is there, the size is not
    assert got[ids["short"]] == row("short", ALL_REDUCE, comm_id=7)  # an 8-byte payload: the id only
    assert got[ids["twice"]] == row("twice", TWICE)  # registered differently by two processes: not decoded
    assert got[ids["two_payloads"]] == row("two_payloads", ALL_REDUCE, comm_id=5, message_bytes=64, reduction="Max")
    assert got[ids["no_payloads"]] == row("no_payloads", None)
    assert got[ids["claims_more"]] == row("claims_more", ALL_REDUCE, comm_id=7, message_bytes=4096, reduction="Sum")
    assert ids["cccl"] not in got and ids["no_blob"] not in got  # another library's domain; no payload
    assert len(got) == len(ids) - 2
    # binaryData is declared TEXT and holds blobs, which DuckDB's SQLite scanner refuses: NVTX's other readers are
    # unaffected, the importer reads the blobs through SQLite's hex()
    assert handles["with"].sql("SELECT count(*) AS n FROM nvtx_range")["n"][0] == len(ids)


def test_blobs_without_schema_tables(synthetic):
    """The schema tables missing (stubs): every range with a payload, its schema id, no values."""
    handles, ids = synthetic
    got = table(handles["without"])
    assert len(got) == len(ids) - 2
    assert got[ids["max"]]["schema_id"] == ALL_REDUCE
    assert all(v is None for r in got.values() for k, v in r.items() if k not in ("range_id", "schema_id"))


def test_types(synthetic):
    handles, _ = synthetic
    types = dict(handles["with"].sql("SELECT column_name, data_type FROM information_schema.columns "
                                     "WHERE table_name = 'nccl_payload'").rows())
    assert types == {"range_id": "BIGINT", "schema_id": "BIGINT", "comm_id": "UBIGINT", "message_bytes": "BIGINT",
                     "ranks": "BIGINT", "rank": "BIGINT", "root_rank": "BIGINT", "peer_rank": "BIGINT",
                     "reduction": "VARCHAR", "cuda_device": "BIGINT"}


def test_old_exports_have_an_empty_table(tmp_path):
    """2022.1's NVTX_EVENTS has no binaryData, the 2021 export no NVTX_EVENTS: the table is there, empty."""
    old = load_script("scripts/make_old_exports.py")
    files = {f: old.old_training(f).write(tmp_path / f"old_{f}.sqlite") for f in old.FLAVOURS}
    with opened_each(files, tmp_path / "cache") as handles:
        for ex in handles.values():
            assert ex.sql("SELECT count(*) AS n FROM nccl_payload")["n"][0] == 0

