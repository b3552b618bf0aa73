// SPDX-License-Identifier: Apache-2.0

package tracer

// PodInfo is the Kubernetes pod and container a process runs in, as the
// node's container runtime names them (tracer/kube). An event carries it
// only where its ContainerID is a container the runtime knows.
type PodInfo struct {
	Name      string // the pod's name
	Namespace string // the pod's namespace
	UID       string // the pod's uid
	Container string // the container's name in the pod spec
	Image     string // the image as the pod spec names it (nginx:1.27)
	ImageID   string // the runtime's reference to the image (its digest)
}

// IsZero reports whether p says nothing.
func (p *PodInfo) IsZero() bool { return *p == PodInfo{} }

// PodSource gives the pod of a container for the pipeline, before the
// sinks: an answer it has, or none, never a wait (tracer/kube's Enricher
// asks the runtime in the background).
type PodSource interface {
	// Pod returns the pod of the container with id containerID, and
	// false when it is not known (yet).
	Pod(containerID string) (PodInfo, bool)
	// PodStats returns the source's counters, for the metrics.
	PodStats() PodStats
}

// PodStats counts what a PodSource did.
type PodStats struct {
	// Misses: events of a container whose pod was not known when they
	// passed, sent without it.
	Misses uint64
	// Errors: calls to the runtime that failed or timed out.
	Errors uint64
	// Containers: the containers whose answer is held now.
	Containers int
}
