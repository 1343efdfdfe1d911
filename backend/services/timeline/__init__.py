"""The timeline of a stored trace: collection at ingest, the level-of-detail index, lanes, gaps,
windows and steps.
"""
