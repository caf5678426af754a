from corobench.cli import main

main()
