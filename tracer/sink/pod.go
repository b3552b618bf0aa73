// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/tracer-dev/tracer/tracer"
)

// The Kubernetes fields (tracer.PodInfo, watch --kubernetes), per format.
// Each is written only when the runtime named it; none outside a pod.

// appendPodJSON appends pod, pod_namespace, pod_uid, container_name,
// image and image_id: beside container_id, named after it.
func appendPodJSON(b []byte, e *tracer.Event) []byte {
	p := &e.Pod
	b = appendOptString(b, `,"pod":`, p.Name)
	b = appendOptString(b, `,"pod_namespace":`, p.Namespace)
	b = appendOptString(b, `,"pod_uid":`, p.UID)
	b = appendOptString(b, `,"container_name":`, p.Container)
	b = appendOptString(b, `,"image":`, p.Image)
	return appendOptString(b, `,"image_id":`, p.ImageID)
}

// samePod is a.Pod == b.Pod, without calls where the strings are shared.
func samePod(a, b *tracer.Event) bool {
	x, y := &a.Pod, &b.Pod
	return sameString(x.Name, y.Name) && sameString(x.Namespace, y.Namespace) && sameString(x.UID, y.UID) &&
		sameString(x.Container, y.Container) && sameString(x.Image, y.Image) && sameString(x.ImageID, y.ImageID)
}

// appendPodText appends " pod=NAMESPACE/NAME/CONTAINER": short, the
// rest is in the other formats.
func appendPodText(b []byte, e *tracer.Event) []byte {
	p := &e.Pod
	if p.Name == "" {
		return b
	}
	b = append(b, " pod="...)
	return appendField(b, p.Namespace+"/"+p.Name+"/"+p.Container)
}

// appendECSContainer appends ECS's container (id, name, image.name) and
// orchestrator (the pod as a kubernetes resource: its namespace, name,
// uid), as Elastic's Kubernetes metadata fills them.
func appendECSContainer(b []byte, e *tracer.Event) []byte {
	if e.ContainerID == "" {
		return b
	}
	p := &e.Pod
	b = append(b, `,"container":{"id":`...)
	b = AppendJSONString(b, e.ContainerID)
	b = appendOptString(b, `,"name":`, p.Container)
	if p.Image != "" {
		b = append(b, `,"image":{"name":`...)
		b = AppendJSONString(b, p.Image)
		b = append(b, '}')
	}
	b = append(b, '}')
	if p.Name == "" {
		return b
	}
	b = append(b, `,"orchestrator":{"type":"kubernetes"`...)
	b = appendOptString(b, `,"namespace":`, p.Namespace)
	b = append(b, `,"resource":{"type":"pod","name":`...)
	b = AppendJSONString(b, p.Name)
	b = appendOptString(b, `,"id":`, p.UID)
	return append(b, `}}`...)
}

// appendPodExtra appends, under tracer. (ECS) or unmapped (OCSF), what
// the schema has no field for, named as in the JSON lines.
func appendPodExtra(b []byte, e *tracer.Event, ocsf bool) []byte {
	p := &e.Pod
	if ocsf {
		// OCSF's container has the pod's uid and the container, not the pod.
		b = appendOptString(b, `,"pod":`, p.Name)
		return appendOptString(b, `,"pod_namespace":`, p.Namespace)
	}
	return appendOptString(b, `,"image_id":`, p.ImageID)
}

// appendOCSFContainer appends OCSF's container: uid, name, image (its
// uid the runtime's reference, its name the spec's), orchestrator and
// pod_uuid.
func appendOCSFContainer(b []byte, e *tracer.Event) []byte {
	if e.ContainerID == "" {
		return b
	}
	p := &e.Pod
	b = append(b, `,"container":{"uid":`...)
	b = AppendJSONString(b, e.ContainerID)
	b = appendOptString(b, `,"name":`, p.Container)
	if uid := p.ImageID; uid != "" || p.Image != "" {
		if uid == "" {
			uid = p.Image // image.uid is required
		}
		b = append(b, `,"image":{"uid":`...)
		b = AppendJSONString(b, uid)
		b = appendOptString(b, `,"name":`, p.Image)
		b = append(b, '}')
	}
	if p.Name != "" {
		b = append(b, `,"orchestrator":"kubernetes"`...)
	}
	b = appendOptString(b, `,"pod_uuid":`, p.UID)
	return append(b, '}')
}

// otlpPodAttrs appends the OpenTelemetry semantic conventions' names of
// the pod fields (k8s.*, container.image.id); the ECS document the other
// attributes come from has container.name and container.image.name.
func otlpPodAttrs(kvs []attribute.KeyValue, e *tracer.Event) []attribute.KeyValue {
	p := &e.Pod
	for _, f := range [...]struct{ k, v string }{
		{"k8s.pod.name", p.Name}, {"k8s.namespace.name", p.Namespace}, {"k8s.pod.uid", p.UID},
		{"k8s.container.name", p.Container}, {"container.image.id", p.ImageID},
	} {
		if f.v != "" {
			kvs = append(kvs, attribute.String(f.k, f.v))
		}
	}
	return kvs
}
