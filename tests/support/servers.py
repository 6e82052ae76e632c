"""Real servers for tests, on loopback ephemeral ports: one home, shared with the benchmarks,
in `tipbench_dev.servers`."""

from tipbench_dev.servers import (
    LlamaCppServer,
    MlflowServer,
    ServerProcess,
    TipbenchServer,
    free_port,
)

__all__ = ["LlamaCppServer", "MlflowServer", "ServerProcess", "TipbenchServer", "free_port"]
