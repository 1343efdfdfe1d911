"""SLAs: definitions, evaluation, baselines, and the alerts and webhooks their status changes
send.
"""
