// SPDX-License-Identifier: Apache-2.0

// Package kube gives events their Kubernetes pod: it asks the node's
// container runtime (containerd, CRI-O) over its CRI socket which pod,
// container and image each container id is, and keeps the answers for
// the pipeline. The pipeline never waits for the runtime: an answer not
// in yet is asked for in the background, and the event goes out without
// it (counted). It returns errors and never logs.
package kube

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tracer-dev/tracer/tracer"
)

// DefaultSockets are the CRI sockets of containerd and CRI-O, in the
// order FindSocket tries them.
var DefaultSockets = []string{"/run/containerd/containerd.sock", "/run/crio/crio.sock", "/var/run/crio/crio.sock"}

// ErrNoRuntime: no CRI socket where one was looked for.
var ErrNoRuntime = errors.New("no container runtime socket")

// ErrNotCRI: the socket's runtime serves no CRI (docker's containerd,
// whose CRI plugin is off): no kubelet uses it, so no container has a pod.
var ErrNotCRI = errors.New("the container runtime serves no CRI")

// The labels the kubelet puts on every container it asks a runtime for.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// FindSocket returns the first of DefaultSockets that is a socket.
func FindSocket() (string, error) {
	for _, p := range DefaultSockets {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Type() == fs.ModeSocket {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w at %s", ErrNoRuntime, strings.Join(DefaultSockets, " or "))
}

// Options tune an Enricher; zero fields take the defaults.
type Options struct {
	// Socket is the runtime's CRI socket.
	Socket string
	// Refresh is how often every container is listed (10s): new pods'
	// answers come in, removed containers' go.
	Refresh time.Duration
	// Timeout bounds each call to the runtime (2s): a runtime that hangs
	// holds up the background, never the events.
	Timeout time.Duration
	// MaxContainers bounds the answers held (8192); the least recently
	// used goes first.
	MaxContainers int
	// Queue bounds the containers waiting to be asked for (256); an
	// event of one more goes out without its pod and asks again later.
	Queue int
}

const (
	defaultRefresh = 10 * time.Second
	defaultTimeout = 2 * time.Second
	defaultMax     = 8192
	defaultQueue   = 256
	// retryAfter is how long a container the runtime does not know, or
	// whose call failed, is not asked for again: a container of another
	// runtime (docker, podman) would otherwise be asked for at each event.
	retryAfter = 30 * time.Second
	// maxField bounds each string taken from the runtime.
	maxField = 512
	// maxRecv bounds a reply: ListContainers of a full node is well under.
	maxRecv = 16 << 20
)

// Enricher answers tracer.PodSource from what the runtime said.
type Enricher struct {
	o    Options
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient

	mu      sync.Mutex
	lru     *list.List // of *entry, most recently used first
	byID    map[string]*list.Element
	pending map[string]bool // queued or being asked for
	gen     uint64          // ListContainers done so far

	queue chan string

	misses, errs atomic.Uint64
	off          atomic.Bool // the runtime serves no CRI
	// now is time.Now; tests move it.
	now func() time.Time
}

// entry is what the runtime said of one container.
type entry struct {
	id  string
	pod tracer.PodInfo
	ok  bool // a pod's container; false: not one, or not known
	// failed: !ok because the call failed (its events count as misses),
	// not because the runtime said it is no pod's.
	failed bool
	gen    uint64 // the last list it was in (or was asked for after)
	// retry: for !ok, when to ask again.
	retry time.Time
}

// New makes an Enricher for the runtime at o.Socket. It does not call
// the runtime (Run does): a socket that is not there is an error that
// wraps ErrNoRuntime.
func New(o Options) (*Enricher, error) {
	if o.Refresh <= 0 {
		o.Refresh = defaultRefresh
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.MaxContainers <= 0 {
		o.MaxContainers = defaultMax
	}
	if o.Queue <= 0 {
		o.Queue = defaultQueue
	}
	fi, err := os.Stat(o.Socket)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoRuntime, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("%w: %s is not a socket", ErrNoRuntime, o.Socket)
	}
	conn, err := grpc.NewClient("unix://"+o.Socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)))
	if err != nil {
		return nil, fmt.Errorf("connecting to the container runtime at %s: %w", o.Socket, err)
	}
	return &Enricher{
		o: o, conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn),
		lru: list.New(), byID: make(map[string]*list.Element), pending: make(map[string]bool),
		queue: make(chan string, o.Queue), now: time.Now,
	}, nil
}

// Close closes the connection to the runtime; call it after Run returned.
func (e *Enricher) Close() error { return e.conn.Close() }

// Socket is the runtime's socket.
func (e *Enricher) Socket() string { return e.o.Socket }

// Pod returns the pod of container id as last known, without waiting.
// A container not known yet is queued to be asked for, and counted.
func (e *Enricher) Pod(id string) (tracer.PodInfo, bool) {
	if e.off.Load() {
		return tracer.PodInfo{}, false
	}
	e.mu.Lock()
	if el, ok := e.byID[id]; ok {
		en := el.Value.(*entry)
		if en.ok {
			e.lru.MoveToFront(el)
			pod := en.pod
			e.mu.Unlock()
			return pod, true
		}
		if e.now().Before(en.retry) {
			failed := en.failed
			e.mu.Unlock()
			if failed {
				e.misses.Add(1)
			}
			return tracer.PodInfo{}, false
		}
	}
	e.enqueueLocked(id)
	e.mu.Unlock()
	e.misses.Add(1)
	return tracer.PodInfo{}, false
}

// enqueueLocked queues id to be asked for, unless it is already.
func (e *Enricher) enqueueLocked(id string) {
	if e.pending[id] {
		return
	}
	select {
	case e.queue <- id:
		e.pending[id] = true
	default:
		// Full: a later event of the container asks again.
	}
}

// PodStats returns the counters.
func (e *Enricher) PodStats() tracer.PodStats {
	e.mu.Lock()
	n := 0
	for el := e.lru.Front(); el != nil; el = el.Next() {
		if el.Value.(*entry).ok {
			n++
		}
	}
	e.mu.Unlock()
	return tracer.PodStats{Misses: e.misses.Load(), Errors: e.errs.Load(), Containers: n}
}

// Run lists the containers now and every Refresh, and asks for those
// events named that were not known, until ctx ends. Failed calls are
// counted (PodStats) and tried again later. A runtime that answers the
// first list with "unimplemented" serves no CRI: Run returns ErrNotCRI at
// once, and Pod answers nothing from then on.
func (e *Enricher) Run(ctx context.Context) error {
	if err := e.Refresh(ctx); status.Code(err) == codes.Unimplemented {
		e.off.Store(true)
		return fmt.Errorf("%w: %w", ErrNotCRI, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.serveQueue(ctx)
	}()
	t := time.NewTicker(e.o.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-done
			return nil
		case <-t.C:
		}
		_ = e.Refresh(ctx) // counted in errs
	}
}

func (e *Enricher) serveQueue(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-e.queue:
			_ = e.lookup(ctx, id) // counted in errs
		}
	}
}

// Refresh lists every container once; containers that were in no list
// twice in a row (removed) are forgotten.
func (e *Enricher) Refresh(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	resp, err := e.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		e.errs.Add(1)
		return fmt.Errorf("listing the runtime's containers at %s: %w", e.o.Socket, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	for _, c := range resp.GetContainers() {
		id := c.GetId()
		if id == "" {
			continue
		}
		pod, ok := podOf(c.GetLabels(), c.GetMetadata().GetName(), c.GetImage(), c.GetImageRef())
		if !ok {
			continue
		}
		if pod.Image == "" {
			if old, have := e.byID[id]; have && old.Value.(*entry).pod.Image != "" {
				pod.Image = old.Value.(*entry).pod.Image
			} else {
				// The list gives the image's id alone (a kubelet that
				// does not pass the spec's name): ContainerStatus names it.
				e.enqueueLocked(id)
			}
		}
		e.putLocked(id, pod, true)
	}
	for el := e.lru.Back(); el != nil; {
		prev := el.Prev()
		if en := el.Value.(*entry); en.gen+1 < e.gen && (en.ok || !e.now().Before(en.retry)) {
			e.lru.Remove(el)
			delete(e.byID, en.id)
		}
		el = prev
	}
	return nil
}

// lookup asks the runtime for one container.
func (e *Enricher) lookup(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	resp, err := e.rt.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, id)
	if err != nil {
		if status.Code(err) != codes.NotFound {
			e.errs.Add(1)
			if el, have := e.byID[id]; have && el.Value.(*entry).ok {
				// What the list said stands; the image stays unnamed.
				return fmt.Errorf("asking the runtime at %s for container %s: %w", e.o.Socket, id, err)
			}
		}
		e.putLocked(id, tracer.PodInfo{}, false)
		e.byID[id].Value.(*entry).failed = status.Code(err) != codes.NotFound
		return fmt.Errorf("asking the runtime at %s for container %s: %w", e.o.Socket, id, err)
	}
	st := resp.GetStatus()
	pod, ok := podOf(st.GetLabels(), st.GetMetadata().GetName(), st.GetImage(), st.GetImageRef())
	e.putLocked(id, pod, ok)
	return nil
}

// putLocked keeps what the runtime said of id, evicting the least
// recently used answer when full.
func (e *Enricher) putLocked(id string, pod tracer.PodInfo, ok bool) {
	en := &entry{id: id, pod: pod, ok: ok, gen: e.gen}
	if !ok {
		en.pod = tracer.PodInfo{}
		en.retry = e.now().Add(retryAfter)
	}
	if el, have := e.byID[id]; have {
		el.Value = en
		e.lru.MoveToFront(el)
		return
	}
	for e.lru.Len() >= e.o.MaxContainers {
		last := e.lru.Back()
		e.lru.Remove(last)
		delete(e.byID, last.Value.(*entry).id)
	}
	e.byID[id] = e.lru.PushFront(en)
}

// podOf reads a container's pod from the kubelet's labels; ok is false
// for a container no kubelet made (no pod name).
func podOf(labels map[string]string, metaName string, img *runtimeapi.ImageSpec, imageRef string) (tracer.PodInfo, bool) {
	p := tracer.PodInfo{
		Name:      clean(labels[labelPodName]),
		Namespace: clean(labels[labelPodNamespace]),
		UID:       clean(labels[labelPodUID]),
		Container: clean(labels[labelContainerName]),
		ImageID:   clean(imageRef),
	}
	if p.Name == "" {
		return tracer.PodInfo{}, false
	}
	if p.Container == "" {
		p.Container = clean(metaName)
	}
	p.Image = clean(imageName(img))
	return p, true
}

// imageName is the image as the pod spec names it: the kubelet passes
// the image's id in Image and the spec's name in UserSpecifiedImage;
// ContainerStatus gives a name (a repo tag) in Image.
func imageName(img *runtimeapi.ImageSpec) string {
	if u := img.GetUserSpecifiedImage(); u != "" {
		return u
	}
	if i := img.GetImage(); i != "" && !strings.HasPrefix(i, "sha256:") {
		return i
	}
	return ""
}

// clean bounds a string from the runtime and keeps it UTF-8.
func clean(s string) string {
	if len(s) > maxField {
		s = s[:maxField]
	}
	if !utf8.ValidString(s) {
		// A cut rune, or a runtime that sends what protobuf should refuse.
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
