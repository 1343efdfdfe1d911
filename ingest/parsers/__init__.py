"""One module per trace format; each exposes `parse(path, report) -> (TraceMeta, Iterator[Event])`."""
