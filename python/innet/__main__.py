from innet.cli import main

main()
