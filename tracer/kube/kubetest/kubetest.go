// SPDX-License-Identifier: Apache-2.0

// Package kubetest is a container runtime for tests: a CRI server on a
// unix socket that answers ListContainers and ContainerStatus from the
// containers a test gives it, and can hang or go away.
package kubetest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is a fake CRI runtime service.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	Socket string

	srv        *grpc.Server
	mu         sync.Mutex
	containers map[string]*runtimeapi.Container
	statusImg  map[string]string // ContainerStatus's image name, where not the spec's
	hang       chan struct{}     // non-nil: calls wait until it is closed
	// Lists and Statuses count the calls served.
	Lists, Statuses atomic.Int64
}

// Pod is what Add puts on a container.
type Pod struct {
	Name, Namespace, UID, Container, Image, ImageID string
}

// Start serves a Runtime on a socket in t.TempDir() until the test ends.
func Start(t testing.TB) *Runtime {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runtime{Socket: sock, srv: grpc.NewServer(), containers: map[string]*runtimeapi.Container{}, statusImg: map[string]string{}}
	runtimeapi.RegisterRuntimeServiceServer(r.srv, r)
	go func() { _ = r.srv.Serve(l) }()
	t.Cleanup(func() { r.Hang(false); r.srv.Stop() })
	return r
}

// Add makes container id a container of pod p.
func (r *Runtime) Add(id string, p Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.containers[id] = &runtimeapi.Container{
		Id:       id,
		Metadata: &runtimeapi.ContainerMetadata{Name: p.Container},
		// As the kubelet asks: the image's id, and the spec's name.
		Image:    &runtimeapi.ImageSpec{Image: p.ImageID, UserSpecifiedImage: p.Image},
		ImageRef: p.ImageID,
		State:    runtimeapi.ContainerState_CONTAINER_RUNNING,
		Labels: map[string]string{
			"io.kubernetes.pod.name": p.Name, "io.kubernetes.pod.namespace": p.Namespace,
			"io.kubernetes.pod.uid": p.UID, "io.kubernetes.container.name": p.Container,
		},
	}
}

// SetStatusImage makes ContainerStatus name container id's image img
// (a runtime's repo tag) whatever the list says.
func (r *Runtime) SetStatusImage(id, img string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statusImg[id] = img
}

// Remove removes container id.
func (r *Runtime) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.containers, id)
}

// Hang makes every call wait (until the caller gives up), or no more.
func (r *Runtime) Hang(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case on && r.hang == nil:
		r.hang = make(chan struct{})
	case !on && r.hang != nil:
		close(r.hang)
		r.hang = nil
	}
}

// Stop makes the runtime go away: its socket refuses.
func (r *Runtime) Stop() { r.srv.Stop() }

func (r *Runtime) wait(ctx context.Context) error {
	r.mu.Lock()
	h := r.hang
	r.mu.Unlock()
	if h == nil {
		return nil
	}
	select {
	case <-h:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ListContainers lists every container.
func (r *Runtime) ListContainers(ctx context.Context, _ *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	r.Lists.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	resp := &runtimeapi.ListContainersResponse{}
	for _, c := range r.containers {
		resp.Containers = append(resp.Containers, c)
	}
	return resp, nil
}

// ContainerStatus tells of one container, naming its image as a
// runtime does (a repo tag).
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	r.Statuses.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.GetContainerId())
	}
	img := c.Image.GetUserSpecifiedImage()
	if s, ok := r.statusImg[c.Id]; ok {
		img = s
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: c.Id, Metadata: c.Metadata, State: c.State, Labels: c.Labels, ImageRef: c.ImageRef,
		Image: &runtimeapi.ImageSpec{Image: img},
	}}, nil
}
