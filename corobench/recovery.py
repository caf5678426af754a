"""Sessions whose harness is gone (kill -9, a crashed machine): mark them `abandoned`, clean up.

Every corobench command that opens a results folder first reads its bookkeeping (bookkeeping.py):
for each harness that no longer exists (a pid is compared with its start time, so a reused pid
is not mistaken for it), it kills the process groups, removes the cgroups and stops the remote
processes recorded for it — whatever state its session was left in (a session that ended
`interrupted` may still have left a cgroup that would not go) — marks a session still `running`
as `abandoned`, and says so in one line each. A session marked running whose harness left no
bookkeeping at all (killed before it wrote any) is abandoned too.
"""

from __future__ import annotations

from pathlib import Path

from corobench import bookkeeping
from corobench.errors import StoreError
from corobench.hosts import cleanup
from corobench.tracking import process_identity


def harness_alive(record: bookkeeping.HarnessRecord) -> bool:
    return record.pid is not None and record.identity is not None and process_identity(record.pid) == record.identity


def recover_abandoned(results_dir: Path, store) -> list[str]:
    """Clean up after dead harnesses of this results folder; one message per session or leftover.
    `store` may be None (no database yet): the leftovers are cleaned up all the same."""
    messages = []
    alive: set[str] = set()
    for record in bookkeeping.harnesses(results_dir):
        if harness_alive(record):
            alive.add(record.token)
            continue
        done = {"killed": 0, "removed": 0, "stopped": 0}
        left = []
        for entry in bookkeeping.read_entries(record.folder):
            outcome = cleanup(entry)
            if outcome is None:
                left.append(entry)  # could not be reached or removed now: tried again next time
                continue
            if outcome:
                done[outcome] += 1
            bookkeeping.remove_entry(record.folder, entry)
        status = None
        if record.session is not None and store is not None:
            status = store.session_status(record.session)
            if status == "running":
                store.end_session(record.session, "abandoned")
        if not left:
            bookkeeping.remove_folder(record.folder)
        what = ", ".join(f"{verb} {n} {noun}" for (verb, noun), n in (
            (("killed", "process group(s)"), done["killed"]), (("removed", "cgroup(s)"), done["removed"]),
            (("stopped", "remote process(es)"), done["stopped"])) if n)
        if status == "running":
            messages.append(f"session {record.session} was abandoned (its corobench, pid {record.pid}, is gone)"
                            + (f": {what} left behind" if what else ""))
        elif what:
            messages.append(f"cleaned up after session {record.session} (its corobench, pid {record.pid}, is gone): "
                            f"{what} left behind")
        if left:
            messages.append(f"could not clean up {len(left)} thing(s) left by session {record.session}: "
                            + ", ".join(f"{e.what} {e.ref} on {e.host}" for e in left[:5]))
    if store is not None:
        try:
            for session in store.running_sessions():
                if session.harness_token not in alive:
                    store.end_session(session.id, "abandoned")
                    messages.append(f"session {session.id} was abandoned (its corobench is gone)")
        except StoreError:
            pass
    return messages
