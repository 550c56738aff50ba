"""Evaluation: declarative tasks (`base`), their registry and suites, the runner that embeds each unique
sentence once, the report, the forgetting reports and an MTEB wrapper. `polyembed.evaluate` is the entry point.

Importing this package imports nothing else: the built-in tasks register when `polyembed.eval.tasks` is imported.
"""
