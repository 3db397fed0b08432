"""Communication per rank and step (analysis.comm): the straggler is decided in its SQL, over the ranks of one export;
over several exports of one job nsysql/answers/job.py decides it again over every rank."""
from __future__ import annotations

RANK_KEYS = ("export", "pid", "device_id")
