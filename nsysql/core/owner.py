"""Who owns a scratch file: `<pid>@<host>` in its name, so a later run can tell whether its owner still lives
(nsysql/store/hygiene.py removes what dead owners left)."""
from __future__ import annotations

import os
import re
import socket


def host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def owner_tag() -> str:
    """`<pid>@<host>`: put in the names of scratch files, so a later run can tell whether their owner lives."""
    return f"{os.getpid()}@{host()}"
