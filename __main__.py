from inquitree.cli import main

main()
