"""Run one update/undo pair and stop dead at a named point of the protocol, waiting to be
killed with SIGKILL by tests/test_commit.py. Not a test module: run as a script.

    python tests/crash_child.py MODE TABLE_DIR POINT
"""

import sys
import time
from dataclasses import replace

from wisconsin.engines import commit
from wisconsin.engines.base import EngineConfig, Fault
from wisconsin.measure.runner import make_engine
from wisconsin.store import read_manifest
from wisconsin.workloads.wisconsin import queries

UPDATE, UNDO = "uupdate0000000001", "uundo000000000001"


def main() -> None:
    mode, table, point = sys.argv[1:4]
    engine = make_engine(mode, EngineConfig(timeout_s=600))
    m = read_manifest(table)
    engine.start(m.partitions)
    engine.open_table(m, table)

    def halt(where: str) -> None:
        if where == point:
            print(f"HALT {where}", flush=True)
            time.sleep(600)

    decide = commit.DecisionLog.decide

    def decide_and_halt(self, txid, statements):
        name = "update" if txid == UPDATE else "undo"
        halt(f"{name}-before-decision")  # every partition prepared, nothing committed
        decide(self, txid, statements)
        halt(f"{name}-after-decision")  # decided, no partition committed yet

    commit.DecisionLog.decide = decide_and_halt
    # partial commit: partition 1 stalls in its commit while the others commit
    stall = Fault(part=1, phase="commit", action="sleep", seconds=600)
    undo = engine.statements(queries.get("update"), m, "full-row", delta=-117)
    with commit.update_pair(table, UPDATE, UNDO, undo):
        if point == "update-partial-commit":
            engine.config = replace(engine.config, fault=stall)
            print(f"HALT {point}", flush=True)  # the stall is inside the update's commit
        engine.update(UPDATE, engine.statements(queries.get("update"), m, "full-row"))
        halt("between-update-and-undo")
        if point == "undo-partial-commit":
            engine.config = replace(engine.config, fault=stall)
            print(f"HALT {point}", flush=True)
        engine.update(UNDO, undo)
        halt("after-undo")
    print("FINISHED without halting", flush=True)


if __name__ == "__main__":
    main()
