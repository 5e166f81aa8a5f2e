from inquitree.core.cli import entry

entry()
