"""The ground floor every layer may import: what crosses InquiTree's boundary with the outside.

Text that reaches a terminal (``text``: escaped so that no model output, tree text or stored name
can act on the terminal), files read from and written for a user (``files``: regular files only,
to a size the reader names; never through a link; names confined to their folder), and the base
of the errors a user reads as one line (``errors``). Nothing here imports the rest of InquiTree.
"""
