"""Who is calling and what they may do: users, tokens, sessions, passwords, permissions, rate
limits.
"""
