"""nsysql: exact, fast answers about where GPU time went in an Nsight Systems export."""
from .errors import MissingDataError, NsysqlError
from .export import Export, open  # noqa: A004

__version__ = "0.1.0"


def reports() -> list[str]:
    """Names of the `nsys stats`-identical reports."""
    from . import catalog
    return [q.name for q in catalog.group("reports")]


__all__ = ["Export", "open", "reports", "NsysqlError", "MissingDataError", "__version__"]
