"""The one error bad report or trace input raises (the CLI turns it into exit code 2)."""

from __future__ import annotations


class ReportInputError(ValueError):
    """A file, label or option the report cannot use; the message names it and what is wrong."""
