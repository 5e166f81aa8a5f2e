from inquitree.core.cli import main

main()
