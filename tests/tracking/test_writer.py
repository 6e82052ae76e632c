"""The background writer: runs written in order, off the hot path, below generation's priority."""

from __future__ import annotations

import os
import threading

from mlflow import MlflowClient

from tipbench.tracking import BackgroundWriter, TrackingStore


def test_writes_run_in_order_at_a_lower_cpu_priority(sqlite_uri: str, experiment: str) -> None:
    store = TrackingStore(sqlite_uri)
    experiment_id = store.experiment_id(experiment, create=True)
    writer = BackgroundWriter(store)
    seen: list[tuple[str, int]] = []

    def write(name: str) -> None:
        def job(client: MlflowClient) -> None:
            client.create_run(experiment_id, run_name=name)
            nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            seen.append((name, nice))

        writer.submit(name, job)

    for name in ("first", "second", "third"):
        write(name)
    assert writer.close() == []

    # the writer's thread yields the CPU to the model's threads (Linux sets nice per thread)
    lower = min(os.getpriority(os.PRIO_PROCESS, 0) + 10, 19)  # 19: the lowest priority
    assert seen == [("first", lower), ("second", lower), ("third", lower)]
    runs = store.client.search_runs([experiment_id])
    assert sorted(r.info.run_name for r in runs) == ["first", "second", "third"]
