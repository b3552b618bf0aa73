// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"strings"
	"testing"
)

// TestPodFieldsInEveryFormat: an event in a pod carries it in each
// format, under the names docs/events.md gives.
func TestPodFieldsInEveryFormat(t *testing.T) {
	e := schemaEvents()["exec in a pod"]
	p := e.Pod
	has := func(format, doc string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(doc, w) {
				t.Errorf("%s lacks %s:\n%s", format, w, doc)
			}
		}
	}
	has("json", string(AppendJSON(nil, e)), `"pod":"web-7d4b9"`, `"pod_namespace":"shop"`, `"pod_uid":"`+p.UID+`"`,
		`"container_name":"nginx"`, `"image":"docker.io/library/nginx:1.27"`, `"image_id":"sha256:4f5e"`)
	has("text", string(AppendText(nil, e)), " pod=shop/web-7d4b9/nginx")
	has("ecs", string(AppendECS(nil, e)), `"container":{"id":"`+e.ContainerID+`","name":"nginx","image":{"name":"docker.io/library/nginx:1.27"}}`,
		`"orchestrator":{"type":"kubernetes","namespace":"shop","resource":{"type":"pod","name":"web-7d4b9","id":"`+p.UID+`"}}`,
		`"image_id":"sha256:4f5e"`)
	has("ocsf", string(AppendOCSF(nil, e)), `"container":{"uid":"`+e.ContainerID+`","name":"nginx","image":{"uid":"sha256:4f5e","name":"docker.io/library/nginx:1.27"},"orchestrator":"kubernetes","pod_uuid":"`+p.UID+`"}`,
		`"pod":"web-7d4b9","pod_namespace":"shop"`)
	var j Journal
	entry := j.encode(nil, e)
	has("journal", string(entry), "\nTRACER_POD=web-7d4b9\n", "\nTRACER_POD_NAMESPACE=shop\n", "\nTRACER_POD_UID="+p.UID+"\n",
		"\nTRACER_CONTAINER_NAME=nginx\n", "\nTRACER_IMAGE=docker.io/library/nginx:1.27\n", "\nTRACER_IMAGE_ID=sha256:4f5e\n")

	kvs := otlpPodAttrs(newOTLPAttributes(e), e)
	got := map[string]string{}
	for _, kv := range kvs {
		if _, dup := got[string(kv.Key)]; dup {
			t.Errorf("otlp: %s twice", kv.Key)
		}
		got[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"k8s.pod.name": p.Name, "k8s.namespace.name": p.Namespace, "k8s.pod.uid": p.UID,
		"k8s.container.name": p.Container, "container.name": p.Container, "container.image.name": p.Image, "container.image.id": p.ImageID} {
		if got[k] != v {
			t.Errorf("otlp %s = %q, want %q", k, got[k], v)
		}
	}

	// Outside a pod: none of them.
	e = schemaEvents()["fork"]
	for format, doc := range map[string]string{"json": string(AppendJSON(nil, e)), "text": string(AppendText(nil, e)),
		"ecs": string(AppendECS(nil, e)), "ocsf": string(AppendOCSF(nil, e))} {
		for _, k := range []string{"pod", "orchestrator", "image", "container_name"} {
			if strings.Contains(doc, k) {
				t.Errorf("%s outside a pod has %s:\n%s", format, k, doc)
			}
		}
	}
	if kvs := otlpPodAttrs(nil, e); len(kvs) != 0 {
		t.Errorf("otlp outside a pod: %v", kvs)
	}
}
