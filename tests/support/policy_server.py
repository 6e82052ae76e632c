"""`tipbench policy serve` as a real subprocess on a loopback ephemeral port: one home, shared
with the benchmarks, in `tipbench_dev.servers`."""

from tipbench_dev.servers import POLICY_ADMIN_TOKEN as ADMIN_TOKEN
from tipbench_dev.servers import POLICY_TOKEN as TOKEN
from tipbench_dev.servers import PolicyServer

__all__ = ["ADMIN_TOKEN", "TOKEN", "PolicyServer"]
