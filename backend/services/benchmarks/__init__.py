"""Benchmark specs, runs, runners and their cron schedules."""
