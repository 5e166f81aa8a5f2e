"""Small helpers shared by test modules."""

from __future__ import annotations

import dataclasses

from inquitree.events import Event, event_type, registered_types

if "TestNoted" in registered_types():
    Noted = registered_types()["TestNoted"]
else:

    @event_type
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Noted(Event):
        TYPE = "TestNoted"
        n: int
        text: str = ""


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


# For a child process that a test interrupts with SIGINT (Ctrl-C): a shell starts a background job
# with SIGINT ignored, the child inherits that, and Python then installs no KeyboardInterrupt
# handler, so the child would never stop. The child gets the default disposition back first.
INTERRUPTIBLE = {"preexec_fn": _default_sigint}


def model_play(base_url: str, *extra: str) -> list[str]:
    """`inquitree play` with a model agent at ``base_url`` and the hash embedder (offline), and ``extra``."""
    return ["play", "--agent", "openai:m", "--base-url", base_url, "--embedder", "hash", *extra]
