"""Metric series over runs: history reads, statistics, change points and regimes (pure maths below
the SLA rules).
"""
