"""The errors a user reads as one line: their base, and a refused name."""

from __future__ import annotations


class InquiTreeError(Exception):
    """Base of every error InquiTree reports as a one-line message (no traceback)."""


class BadName(InquiTreeError):
    """A name from outside (an episode id, a query name, a file name) that breaks its grammar."""
