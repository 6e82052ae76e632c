"""A real PostgreSQL cluster on a loopback ephemeral port: one home, shared with the
benchmarks, in `tipbench_dev.postgres`."""

from tipbench_dev.postgres import PostgresCluster

__all__ = ["PostgresCluster"]
