"""The one list of output formats every command accepts."""
from enum import Enum


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"
    markdown = "markdown"


class TextFormat(str, Enum):
    """The formats of a command that prints a text for people and json, never a table of rows (summarize)."""
    table = "table"
    markdown = "markdown"
    json = "json"
