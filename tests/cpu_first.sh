#!/bin/sh
# Run a command with the CPU ahead of the rest of the machine, it and every process it starts: in a
# CPU cgroup of its own with 100 times the default weight (cgroup v1 or v2; as root). `make test`
# runs the tests marked `alone` (real-time browser calls) so beside the others. A nice value would
# not do: the browsers start in sessions of their own, which the kernel's autogroups schedule as
# peers of everything else at any nice value. Without a cgroup it exits 125, the command not run.
#     tests/cpu_first.sh COMMAND [ARG ...]
if [ -f /sys/fs/cgroup/cpu/cpu.shares ]; then
    parent=/sys/fs/cgroup/cpu weight_file=cpu.shares weight=102400   # cgroup v1 (default 1024)
else
    parent=/sys/fs/cgroup weight_file=cpu.weight weight=10000        # cgroup v2 (default 100)
fi
group="$parent/turntaking-cpu-first-$$"
if ! { mkdir "$group" && echo "$weight" > "$group/$weight_file" && echo $$ > "$group/cgroup.procs"; } 2>/dev/null; then
    rmdir "$group" 2>/dev/null
    exit 125
fi
"$@" &
child=$!
trap 'kill "$child" 2>/dev/null' INT TERM
wait "$child"
status=$?
echo $$ > "$parent/cgroup.procs" 2>/dev/null
rmdir "$group" 2>/dev/null  # left behind only if a process it started outlived it
exit "$status"
