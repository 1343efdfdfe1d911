"""Loading a stored trace: the ingest pipeline, the event store, progress and the re-enqueue
sweeper.
"""
