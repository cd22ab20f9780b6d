from axlint.cli import main

main()
