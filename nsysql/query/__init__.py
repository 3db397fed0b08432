"""The query API over a Store: run a catalogued query or ad-hoc SQL and get a Polars frame."""
