"""The Store wing: an export's life from input to cache (import and normalize, the build graph, locks, private
copies, damage and rebuild, stored answers, busy marks, hygiene, SQLite's own check)."""
