"""Dev-only helpers shared by the tests and the benchmarks (`bench/`): not part of tipbench.

One home for what both need, importable without path tricks: real servers started as
subprocesses on loopback ephemeral ports (`servers`), a temporary PostgreSQL cluster
(`postgres`), judged cell runs written straight into an MLflow store (`judged_runs`), and a
temporary Airflow with tipbench's DAGs (`airflow`).
Nothing in tipbench imports this package; each module imports its heavy dependencies itself.
"""
