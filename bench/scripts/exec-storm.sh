# exec-storm: spawn /bin/true N times from sh: N forks (dash: vfork) and
# N execs, plus the exec of sh itself.
# Usage: sh exec-storm.sh N
n=${1:-1000}
i=0
while [ $i -lt $n ]
do
    /bin/true
    i=$((i + 1))
done
