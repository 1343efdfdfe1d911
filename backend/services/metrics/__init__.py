"""Metric pushes: the accepted document formats, their problems, and the push transaction."""
