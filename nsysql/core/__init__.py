"""The lowest layer: things every other layer uses (signals, the progress line, output formats, units)."""
