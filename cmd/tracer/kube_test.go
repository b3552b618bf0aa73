// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/kube/kubetest"
	"github.com/tracer-dev/tracer/tracer/tracertest"
)

// TestKubernetesFlagErrors: a wrong --kubernetes, or a socket asked for
// that is not there, is one line and exit status 2.
func TestKubernetesFlagErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.sock")
	cases := []struct {
		args []string
		want string
		root bool
	}{
		{[]string{"--kubernetes", "maybe"}, "use auto, on or off", false},
		{[]string{"--kubernetes", "off", "--cri-socket", missing}, "--cri-socket is for --kubernetes auto or on", false},
		{[]string{"--kubernetes", "on", "--cri-socket", missing}, "give the socket of containerd or CRI-O", true},
		{[]string{"--cri-socket", missing}, "give the socket of containerd or CRI-O", true},
	}
	for _, c := range cases {
		if c.root && os.Geteuid() != 0 {
			continue
		}
		code, stdout, stderr := runTracer(t, nil, append([]string{"watch", "--backend", "ebpf", "--duration", "1s"}, c.args...)...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("watch %v: exit %d, stderr %q (want exit 2 and one line containing %q)", c.args, code, stderr, c.want)
		}
	}
}

// TestWatchKubernetesPods: a process in a cgroup named as containerd's
// CRI names a pod's container is reported, in the JSON lines, with the
// pod the (fake) runtime gives for that container.
func TestWatchKubernetesPods(t *testing.T) {
	tracertest.NeedRoot(t)
	tracertest.LockAudit(t)
	mount := tracertest.Cgroup2(t)
	id := fmt.Sprintf("%064x", time.Now().UnixNano())
	procs := tracertest.MakeCgroup(t, mount, fmt.Sprintf("/tracer-test-%d.slice/cri-containerd-%s.scope", os.Getpid(), id)) + "/cgroup.procs"
	rt := kubetest.Start(t)
	pod := kubetest.Pod{Name: "web-7d4b9", Namespace: "shop", UID: "0b9f6a1e-5c1d-4f7a-9e55-3f2d1c0a7b11",
		Container: "nginx", Image: "docker.io/library/nginx:1.27", ImageID: "sha256:4f5e"}
	rt.Add(id, pod)
	prog := filepath.Join(programs(t, "kubepodprog"), "kubepodprog")

	out, stderr := watchRun(t, func() {
		// The first list is in before the container's process starts.
		for end := time.Now().Add(10 * time.Second); rt.Lists.Load() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("tracer did not list the runtime's containers within 10s")
			}
		}
		cmd := exec.Command("sh", "-c", `echo $$ > "$1" && exec "$2" 0`, "sh", procs, prog)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("running in the container's cgroup: %v %s", err, b)
		}
	}, "--backend", "ebpf", "--format", "json", "--exe", "kubepodprog", "--kubernetes", "on", "--cri-socket", rt.Socket)

	var got []tracer.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e tracer.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, e)
	}
	if len(got) != 1 {
		t.Fatalf("%d events, want the one exec:\n%s\n%s", len(got), out, stderr)
	}
	want := tracer.PodInfo{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Container: pod.Container, Image: pod.Image, ImageID: pod.ImageID}
	if e := got[0]; e.ContainerID != id || e.Pod != want {
		t.Errorf("exec in the container: container_id %q, pod %+v; want %q, %+v\n%s", e.ContainerID, e.Pod, id, want, out)
	}

	// A runtime that hangs holds up no event: the exec comes, at once,
	// without the pod.
	rt.Hang(true)
	var took time.Duration
	out, stderr = watchRun(t, func() {
		start := time.Now()
		cmd := exec.Command("sh", "-c", `echo $$ > "$1" && exec "$2" 0`, "sh", procs, prog)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("running in the container's cgroup: %v %s", err, b)
		}
		took = time.Since(start)
	}, "--backend", "ebpf", "--format", "json", "--exe", "kubepodprog", "--kubernetes", "on", "--cri-socket", rt.Socket)
	var e tracer.Event
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &e); err != nil || e.ContainerID != id || !e.Pod.IsZero() {
		t.Errorf("with a hung runtime: want the exec in the container without its pod (%v):\n%s\n%s", err, out, stderr)
	}
	if took > 5*time.Second {
		t.Errorf("the process took %v with a hung runtime", took)
	}
}
