"""The command line: `app` (typer) and one module per command group, each with `register(app)`."""
