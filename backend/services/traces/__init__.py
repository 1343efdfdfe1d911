"""Traces as records: accept, read, list, delete and every status change; their blobs, kernel
stats and exports.
"""
