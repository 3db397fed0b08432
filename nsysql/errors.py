"""User-facing errors: one line that says what is wrong and how to fix it."""


class NsysqlError(Exception):
    """An error caused by the input or the environment, shown to the user as one line."""


class MissingDataError(NsysqlError):
    """The export lacks a table that a report needs."""
