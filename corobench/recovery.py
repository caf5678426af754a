"""Sessions whose harness is gone (kill -9, a crashed machine): mark them `abandoned`, clean up.

Every corobench command that opens the results database first looks for sessions still marked
`running` whose harness process no longer exists (a pid is compared with its start time, so a
reused pid is not mistaken for it), kills the process groups and removes the cgroups recorded
for them, and says so in one line each.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from corobench import cgroup
from corobench.store import Store
from corobench.tracking import process_identity


def harness_alive(session) -> bool:
    pid, identity = session["harness_pid"], session["harness_identity"]
    return pid is not None and identity is not None and process_identity(pid) == identity


def recover_abandoned(store: Store) -> list[str]:
    messages = []
    hierarchy = cgroup.detect()
    for session in store.running_sessions():
        if harness_alive(session):
            continue
        killed = removed = 0
        for live in store.live_of(session["id"]):
            if live["what"] == "pgid":
                pgid = int(live["ref"])
                if live["identity"] and process_identity(pgid) == live["identity"]:
                    try:
                        os.killpg(pgid, signal.SIGKILL)
                        killed += 1
                    except OSError:
                        pass
            elif live["what"] == "cgroup":
                path = Path(live["ref"])
                if path.exists() and hierarchy is not None:
                    if cgroup.RunCgroup(path, hierarchy.version).remove():
                        removed += 1
            store.remove_live(session["id"], live["what"], live["ref"])
        store.end_session(session["id"], "abandoned")
        who = f"pid {session['harness_pid']}" if session["harness_pid"] else "an older corobench"
        messages.append(f"session {session['id']} was abandoned (its corobench, {who}, is gone): killed "
                        f"{killed} process group(s) and removed {removed} cgroup(s) left behind")
    return messages


class SessionTracker:
    """Records a session's process groups and cgroups in the store as they start and end."""

    def __init__(self, store: Store, session_id: int, guard):
        self.store, self.session_id, self.guard = store, session_id, guard

    def started(self, what: str, ref: str, identity: str | None) -> None:
        with self.guard.critical():
            self.store.add_live(self.session_id, what, ref, identity)

    def ended(self, what: str, ref: str) -> None:
        with self.guard.critical():
            self.store.remove_live(self.session_id, what, ref)
