"""Reading /proc/stat for the busy-machine figure."""

from corobench.hosts.base import other_share
from corobench.hosts.procfs import cpu_times

#            user nice system idle iowait irq softirq steal
BEFORE = """cpu  0 0 0 0 0 0 0 0
cpu0 1000 0 500 8000 100 0 0 0
cpu1 1000 0 500 8000 100 0 0 0
"""
AFTER = """cpu  0 0 0 0 0 0 0 0
cpu0 1050 0 100500 8000 100 20 30 0
cpu1 1070 0 500 8020 110 30 60 10
"""


def test_interrupt_work_is_not_counted_as_other_processes(tmp_path):
    (tmp_path / "stat").write_text(BEFORE)
    before = cpu_times(tmp_path)
    (tmp_path / "stat").write_text(AFTER)
    after = cpu_times(tmp_path)
    # cpu1 over 200 ticks: 70 user, 10 steal busy; idle 20, iowait 10, irq 30, softirq 60 not busy
    assert after.busy[1] - before.busy[1] == 80 and after.total[1] - before.total[1] == 200
    # our process used the 70 user ticks (0.7 s at 100 ticks/s): others only the 10 ticks of steal
    assert abs(other_share(before, after, {1}, 0.7, min_wall_s=0) - 0.05) < 1e-9
