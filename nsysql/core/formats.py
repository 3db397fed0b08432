"""The one list of output formats every command accepts."""
from enum import Enum


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"
    markdown = "markdown"
