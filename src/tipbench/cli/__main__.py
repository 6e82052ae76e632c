from tipbench.cli import main

main()
