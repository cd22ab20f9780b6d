from axlint.console import main

main()
