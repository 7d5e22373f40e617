"""Baselines: saved, checked before a run (machine, stack, settings), found by name, combined from runs."""
