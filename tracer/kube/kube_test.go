// SPDX-License-Identifier: Apache-2.0

package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/kube"
	"github.com/tracer-dev/tracer/tracer/kube/kubetest"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

func cid(n int) string { return fmt.Sprintf("%064x", n) }

var web = kubetest.Pod{Name: "web-7d4b9", Namespace: "shop", UID: "0b9f6a1e-5c1d-4f7a-9e55-3f2d1c0a7b11",
	Container: "nginx", Image: "docker.io/library/nginx:1.27", ImageID: "sha256:" + strings.Repeat("ab", 32)}

func newEnricher(t *testing.T, o kube.Options) *kube.Enricher {
	t.Helper()
	e, err := kube.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// run runs e in the background until the test ends.
func run(t *testing.T, e *kube.Enricher) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// eventually polls f until it holds or 10 s passed.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !f(); {
		if time.Now().After(end) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func wantPod(t *testing.T, got tracer.PodInfo, p kubetest.Pod) {
	t.Helper()
	want := tracer.PodInfo{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Container: p.Container, Image: p.Image, ImageID: p.ImageID}
	if got != want {
		t.Errorf("pod = %+v, want %+v", got, want)
	}
}

func TestKnownContainer(t *testing.T) {
	rt := kubetest.Start(t)
	rt.Add(cid(1), web)
	e := newEnricher(t, kube.Options{Socket: rt.Socket})
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	pod, ok := e.Pod(cid(1))
	if !ok {
		t.Fatal("a listed container is not known")
	}
	wantPod(t, pod, web)
	if st := e.PodStats(); st.Misses != 0 || st.Errors != 0 || st.Containers != 1 {
		t.Errorf("stats = %+v, want no miss, no error, 1 container", st)
	}
}

// TestUnknownThenKnown: an event of a container not known yet goes
// without its pod and is counted; the answer comes in the background,
// from the lookup the miss queued.
func TestUnknownThenKnown(t *testing.T) {
	rt := kubetest.Start(t)
	e := newEnricher(t, kube.Options{Socket: rt.Socket, Refresh: time.Hour})
	run(t, e)
	eventually(t, "the first list", func() bool { return rt.Lists.Load() >= 1 })
	rt.Add(cid(2), web)
	if _, ok := e.Pod(cid(2)); ok {
		t.Fatal("a container created after the list is known before any lookup")
	}
	if st := e.PodStats(); st.Misses != 1 {
		t.Errorf("misses = %d, want 1", st.Misses)
	}
	var pod tracer.PodInfo
	eventually(t, "the queued lookup", func() bool {
		var ok bool
		pod, ok = e.Pod(cid(2))
		return ok
	})
	wantPod(t, pod, web)
	if rt.Statuses.Load() == 0 {
		t.Error("no ContainerStatus call")
	}
}

// TestRefreshFindsNewContainers: the periodic list brings containers in
// even where a lookup said none (it was not there yet).
func TestRefreshFindsNewContainers(t *testing.T) {
	rt := kubetest.Start(t)
	e := newEnricher(t, kube.Options{Socket: rt.Socket, Refresh: 20 * time.Millisecond})
	run(t, e)
	e.Pod(cid(3)) // asked for, not found
	eventually(t, "the lookup", func() bool { return rt.Statuses.Load() >= 1 })
	rt.Add(cid(3), web)
	eventually(t, "the list", func() bool { _, ok := e.Pod(cid(3)); return ok })
}

// TestHungRuntimeDelaysNothing: a runtime that never answers holds up
// the background, never an event: the pipeline keeps its pace.
func TestHungRuntimeDelaysNothing(t *testing.T) {
	rt := kubetest.Start(t)
	rt.Hang(true)
	e := newEnricher(t, kube.Options{Socket: rt.Socket, Timeout: 100 * time.Millisecond, Queue: 8})
	run(t, e)
	var s countSink
	p := tracer.NewPipeline(tracer.Config{Types: vocab.TypeSet(1<<vocab.NumTypes - 1)}, &s)
	p.Pods = e
	const n = 20000
	start := time.Now()
	ev := tracer.Event{Type: vocab.TypeExec, PID: 1, Comm: "sh"}
	for i := range n {
		ev.ContainerID = cid(i % 1000)
		p.Emit(&ev)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%d events took %v with a hung runtime", n, d)
	}
	if s.n != n || s.withPod != 0 {
		t.Errorf("sink got %d events, %d with a pod; want %d, 0", s.n, s.withPod, n)
	}
	if st := e.PodStats(); st.Misses != n {
		t.Errorf("misses = %d, want %d", st.Misses, n)
	}
	eventually(t, "a timed-out call counted", func() bool { return e.PodStats().Errors > 0 })
}

type countSink struct{ n, withPod int }

func (s *countSink) Write(e *tracer.Event) error {
	s.n++
	if !e.Pod.IsZero() {
		s.withPod++
	}
	return nil
}
func (s *countSink) Flush() error { return nil }
func (s *countSink) Close() error { return nil }

// TestPipelineSetsPod: the pipeline gives a known container's events
// their pod, and clears it on a reused event of another.
func TestPipelineSetsPod(t *testing.T) {
	rt := kubetest.Start(t)
	rt.Add(cid(1), web)
	e := newEnricher(t, kube.Options{Socket: rt.Socket})
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []tracer.PodInfo
	p := tracer.NewPipeline(tracer.Config{Types: vocab.TypeSet(1<<vocab.NumTypes - 1)}, sinkFunc(func(ev *tracer.Event) { got = append(got, ev.Pod) }))
	p.Pods = e
	ev := tracer.Event{Type: vocab.TypeExec, PID: 1, ContainerID: cid(1)}
	p.Emit(&ev)
	ev.ContainerID = ""
	p.Emit(&ev)
	if len(got) != 2 {
		t.Fatalf("got %d events", len(got))
	}
	wantPod(t, got[0], web)
	if !got[1].IsZero() {
		t.Errorf("an event outside a container has pod %+v", got[1])
	}
}

type sinkFunc func(*tracer.Event)

func (f sinkFunc) Write(e *tracer.Event) error { f(e); return nil }
func (f sinkFunc) Flush() error                { return nil }
func (f sinkFunc) Close() error                { return nil }

// TestRuntimeGone: a runtime that went away is counted, never a crash;
// what was known stays until it would have expired.
func TestRuntimeGone(t *testing.T) {
	rt := kubetest.Start(t)
	rt.Add(cid(1), web)
	e := newEnricher(t, kube.Options{Socket: rt.Socket, Refresh: 10 * time.Millisecond, Timeout: 200 * time.Millisecond})
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	rt.Stop()
	run(t, e)
	eventually(t, "failed calls counted", func() bool { e.Pod(cid(9)); return e.PodStats().Errors >= 2 })
	if _, ok := e.Pod(cid(1)); !ok {
		t.Error("a container known before the runtime went is forgotten though no list said it was removed")
	}
}

// TestGarbageRuntime: a socket that speaks no gRPC fails each call
// within the timeout.
func TestGarbageRuntime(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "junk.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("HTTP/1.0 500 no\r\n\r\n\x00\xff\x00garbage"))
			_ = c.Close()
		}
	}()
	e := newEnricher(t, kube.Options{Socket: sock, Timeout: 300 * time.Millisecond})
	start := time.Now()
	if err := e.Refresh(context.Background()); err == nil {
		t.Fatal("listing from a socket that speaks no gRPC succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the failed list took %v", d)
	}
	if e.PodStats().Errors != 1 {
		t.Errorf("errors = %d, want 1", e.PodStats().Errors)
	}
}

func TestCacheBound(t *testing.T) {
	rt := kubetest.Start(t)
	for i := range 50 {
		rt.Add(cid(i), web)
	}
	e := newEnricher(t, kube.Options{Socket: rt.Socket, MaxContainers: 16})
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.PodStats().Containers; n != 16 {
		t.Errorf("%d containers held, want the bound, 16", n)
	}
}

// TestRemovedContainersExpire: a container in no list twice is forgotten.
func TestRemovedContainersExpire(t *testing.T) {
	rt := kubetest.Start(t)
	rt.Add(cid(1), web)
	rt.Add(cid(2), web)
	e := newEnricher(t, kube.Options{Socket: rt.Socket})
	ctx := context.Background()
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Remove(cid(1))
	for range 2 {
		if err := e.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.PodStats().Containers; n != 1 {
		t.Errorf("%d containers held after one was removed, want 1", n)
	}
	if _, ok := e.Pod(cid(2)); !ok {
		t.Error("the container still there is forgotten")
	}
}

func TestNoSocket(t *testing.T) {
	_, err := kube.New(kube.Options{Socket: filepath.Join(t.TempDir(), "none.sock")})
	if !errors.Is(err, kube.ErrNoRuntime) {
		t.Errorf("err = %v, want ErrNoRuntime", err)
	}
	if _, err := kube.New(kube.Options{Socket: t.TempDir()}); !errors.Is(err, kube.ErrNoRuntime) {
		t.Errorf("a directory: err = %v, want ErrNoRuntime", err)
	}
}

// TestNotCRI: a runtime that serves no CRI (docker's containerd) turns
// the enricher off: Run says so at once, and no event is counted a miss.
func TestNotCRI(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	defer srv.Stop()
	go func() { _ = srv.Serve(l) }()
	e := newEnricher(t, kube.Options{Socket: sock})
	if err := e.Run(context.Background()); !errors.Is(err, kube.ErrNotCRI) {
		t.Fatalf("Run = %v, want ErrNotCRI", err)
	}
	if _, ok := e.Pod(cid(1)); ok || e.PodStats().Misses != 0 {
		t.Errorf("an enricher without CRI answers or counts: %+v", e.PodStats())
	}
}

// TestImageNamedByStatus: where the list gives the image's id alone,
// ContainerStatus names it.
func TestImageNamedByStatus(t *testing.T) {
	rt := kubetest.Start(t)
	p := web
	p.Image = "" // an older kubelet: no UserSpecifiedImage
	rt.Add(cid(1), p)
	rt.SetStatusImage(cid(1), web.Image)
	e := newEnricher(t, kube.Options{Socket: rt.Socket, Refresh: time.Hour})
	run(t, e)
	eventually(t, "the image named", func() bool { pod, _ := e.Pod(cid(1)); return pod.Image == web.Image })
	pod, _ := e.Pod(cid(1))
	wantPod(t, pod, web)
}

// BenchmarkPodKnown is the cost the pipeline pays per event of a known
// container.
func BenchmarkPodKnown(b *testing.B) {
	rt := kubetest.Start(b)
	for i := range 100 {
		rt.Add(cid(i), web)
	}
	e, err := kube.New(kube.Options{Socket: rt.Socket})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := e.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = cid(i)
	}
	b.ResetTimer()
	for i := range b.N {
		if _, ok := e.Pod(ids[i%100]); !ok {
			b.Fatal("not known")
		}
	}
}
