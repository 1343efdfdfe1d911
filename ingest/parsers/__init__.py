"""One module per trace format, each with `parse(path, report, max_bytes=...)`."""
