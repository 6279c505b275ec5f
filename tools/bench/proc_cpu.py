"""CPU seconds (user + system) a process has used, from /proc/<pid>/stat: the benchmarks' measure
of a server's cost per unit of work."""
import os

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / _TICKS
