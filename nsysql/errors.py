"""User-facing errors: one line that says what is wrong and how to fix it.

A library error names an argument as Python code in backticks (`force=True`, `step=3`, `by='kernel'`, `name=`),
so a Python caller reads the argument to change. The command line shows the same error with the option that sets
it (`--force`, `--step 3`, `--by kernel`, `--name`): `cli_text`. Every option is its argument's name with `-` for
`_`, so no table maps one to the other; the one exception is `use_cache=False`, which the command line says
`--no-cache`."""
from __future__ import annotations

import re

_ARGUMENT = re.compile(r"`([a-z_][a-z0-9_]*)=([^`\s]*)`")


class NsysqlError(Exception):
    """An error caused by the input or the environment, shown to the user as one line."""


class MissingDataError(NsysqlError):
    """The export lacks a table that a report needs."""


class NsysqlWarning(UserWarning):
    """Something the user should know that did not stop the answer (a damaged cache built again, a cache directory
    that could not be written); the command line shows it as one `warning:` line."""


def cli_text(exc: BaseException | str) -> str:
    """`exc`'s message as the command line shows it: each `argument=value` written as its option."""
    return _ARGUMENT.sub(_as_option, str(exc))


def _as_option(m: re.Match) -> str:
    value = m[2].strip("'\"")
    if (m[1], value) == ("use_cache", "False"):
        return "--no-cache"
    option = "--" + m[1].replace("_", "-")
    return option if value in ("", "True") else f"{option} {value}"
