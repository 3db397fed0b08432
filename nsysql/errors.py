"""User-facing errors: one line that says what is wrong and how to fix it.

A library error names an argument as Python code in backticks (`force=True`, `step=3`, `by='kernel'`, `name=`),
so a Python caller reads the argument to change. The command line shows the same error with the option that sets
it (`--force`, `--step 3`, `--by kernel`, `--name`): `cli_text`. Every option is its argument's name with `-` for
`_`, so no table maps one to the other."""
from __future__ import annotations

import re

_ARGUMENT = re.compile(r"`([a-z_][a-z0-9_]*)=([^`\s]*)`")


class NsysqlError(Exception):
    """An error caused by the input or the environment, shown to the user as one line."""


class MissingDataError(NsysqlError):
    """The export lacks a table that a report needs."""


def cli_text(exc: BaseException | str) -> str:
    """`exc`'s message as the command line shows it: each `argument=value` written as its option."""
    return _ARGUMENT.sub(_as_option, str(exc))


def _as_option(m: re.Match) -> str:
    option = "--" + m[1].replace("_", "-")
    value = m[2].strip("'\"")
    return option if value in ("", "True") else f"{option} {value}"
