"""Regression gate: baselines, statistical verdicts, exit codes."""
