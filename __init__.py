"""InquiTree: an event-sourced engine that evaluates AI research agents in the
scientific inquiry loop, over research trees derived from papers.

The repository root is this package: ``core/`` is ``inquitree.core``,
``events/`` is ``inquitree.events`` and so on.
"""

__version__ = "0.1.0"
