"""Real servers for tests, on loopback ephemeral ports: one home, shared with the benchmarks,
in `tipbench._dev.servers`."""

from tipbench._dev.servers import (
    LlamaCppServer,
    MlflowServer,
    ServerProcess,
    TipbenchServer,
    free_port,
)

__all__ = ["LlamaCppServer", "MlflowServer", "ServerProcess", "TipbenchServer", "free_port"]
