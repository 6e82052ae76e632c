"""Dev-only helpers shared by the tests and the benchmarks (`bench/`): not part of tipbench.

One home for what both need: real servers started as subprocesses on loopback ephemeral
ports (`servers`), a temporary PostgreSQL cluster (`postgres`), judged cell runs written
straight into an MLflow store (`judged_runs`), a temporary Airflow with tipbench's DAGs
(`airflow`, `airflow_celery`), and simulated judged experiments that drive the product's
judging loop (`ppi_sim`).

A package beside `tipbench` in `src/`, left out of the wheel (pyproject's
`packages.find`): the tests and benchmarks import it from the source tree (an editable
install puts `src/` on the path). Nothing in tipbench imports it; each module imports its
heavy dependencies itself.
"""
