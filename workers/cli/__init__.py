"""The `perfdash` command: one module per command group, and `serve`, the composition of API,
pages and worker.
"""
