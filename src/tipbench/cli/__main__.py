from tipbench.cli import run

run()
