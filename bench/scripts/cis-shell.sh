# cis-shell: the check loop of a shell CIS benchmark for Kubernetes nodes,
# made to run on its own. get_argument_value parses a fixed kube-apiserver
# command line the way the benchmark's helper does (sed, grep, sed in a
# pipeline), so every iteration makes the same processes on any node:
# 6 forks and 4 execs (dash and bash alike), plus the exec of sh itself.
# Usage: sh cis-shell.sh ITERATIONS
CIS_APISERVER_CMD='kube-apiserver --advertise-address=10.0.0.1 --allow-privileged=true --authorization-mode=Node,RBAC --client-ca-file=/etc/kubernetes/pki/ca.crt --enable-admission-plugins=NodeRestriction --secure-port=6443'

get_argument_value() {
    echo "$1" | sed -e 's/ --/\n--/g' | grep -- "^$2" | sed -e "s/^$2=//"
}
warn() { printf '[WARN] %s\n' "$1"; }
pass() { printf '[PASS] %s\n' "$1"; }

n=${1:-500}
i=1
while [ $i -le $n ]
do
    id="1.2.6"
    description="Ensure that the --authorization-mode argument is not set to AlwaysAllow (Automated)"
    check="$id  - $description"
    if get_argument_value "$CIS_APISERVER_CMD" '--authorization-mode'| grep 'AlwaysAllow' >/dev/null 2>&1; then
        warn "$check"
    else
        pass "$check"
    fi
    i=$((i + 1))
done
