"""Text on its way to a terminal: names quoted and escaped for messages (``shown``), any text with
what a terminal would act on escaped (``printable``), a warning line (``warn``), and how to install
an extra (``install_extra``). Every path that prints to a terminal goes through here."""

from __future__ import annotations

import unicodedata

__all__ = ["ESCAPED_CATEGORIES", "install_extra", "printable", "shown", "warn"]


def shown(value: object, limit: int = 80) -> str:
    """``value`` as a quoted, printable string for an error message or a terminal: every control or
    format character escaped, cut at ``limit`` characters (a hostile name is never echoed raw)."""
    text = str(value)
    cut = len(text) > limit
    text = text[:limit]
    out = []
    for ch in text:
        if ch in "\\'":
            out.append("\\" + ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii") if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'" + ("..." if cut else "")


# What a terminal would act on rather than show, by Unicode category, not by a list: controls (Cc:
# ESC starts colours, clear-screen, OSC titles and hyperlinks; CR overwrites a line), format
# characters (Cf: bidirectional marks and overrides, zero-width marks), line and paragraph
# separators (Zl, Zp), private-use and surrogate code points (Co, Cs). Newline and tab stay.
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cs"})


def printable(text: str, one_line: bool = False) -> str:
    """``text`` as it may reach a terminal: every character of ``ESCAPED_CATEGORIES`` but newline and
    tab escaped and shown (``\\x1b``, ``\\u061c``), so that model output or tree text can colour,
    clear, retitle, reorder or overwrite nothing. With ``one_line``, newlines and tabs are escaped
    too. Every path that prints to a terminal goes through here (``cli/common.py``'s ``echo``,
    :func:`warn`)."""
    if text.isprintable():  # the common case, decided in C: nothing to escape
        return text
    out = []
    for ch in text:
        if ch == "\n" or ch == "\t":
            out.append(("\\n" if ch == "\n" else "\\t") if one_line else ch)
        elif ch.isprintable() or unicodedata.category(ch) not in ESCAPED_CATEGORIES:
            out.append(ch)  # printable, or a space (Zs) or an unassigned code point (Cn): shown as it is
        else:
            c = ord(ch)
            out.append(f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" if c < 0x10000 else f"\\U{c:08x}")
    return "".join(out)


def warn(message: str) -> None:
    """A line on stderr for a person, escaped as :func:`printable` does (it may quote an endpoint's
    error, a tree's text or a name from a file)."""
    import sys

    print(printable(message), file=sys.stderr)


def install_extra(extra: str) -> str:
    """How to install one of InquiTree's extras: from its checkout (it is not on a package index)."""
    return (
        f"pip install '.[{extra}]' in InquiTree's checkout (or pip install 'inquitree[{extra}]' where it is published)"
    )
