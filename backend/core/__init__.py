"""Cross-cutting backend plumbing: settings, database engine, task queue producer."""
