"""The SQL wing read as data: the catalog of versioned query files, macros, views, rules, declared analyses, and
the DuckDB engine that runs them."""
