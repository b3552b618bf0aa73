// SPDX-License-Identifier: Apache-2.0

// Package deploy holds the tracer's deployment files: Kubernetes manifests
// (kubernetes/), a Grafana dashboard (grafana/) and the image's Dockerfile.
// It is a Go module of its own only so that these offline tests can check
// the manifests against the Kubernetes API types without k8s.io/api
// entering the tracer's own dependencies.
package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// exportedMetrics are the metric names the tracer serves at /metrics
// (docs/fleet.md lists them; tracer/metrics exports them), plus the standard Go and
// process collectors' names the dashboard uses. The dashboard may use only
// these; tracer/metrics' TestDashboardMetricsExist checks the dashboard
// against the real collector from the other side.
var exportedMetrics = map[string]bool{
	"tracer_events_total":                  true,
	"tracer_backend_events_total":          true,
	"tracer_events_lost_total":             true,
	"tracer_events_by_comm_total":          true,
	"tracer_audit_backlog":                 true,
	"tracer_audit_backlog_limit":           true,
	"tracer_audit_kernel_lost":             true,
	"tracer_bpf_program_run_seconds_total": true,
	"tracer_bpf_program_runs_total":        true,
	"tracer_build_info":                    true,
	// From collectors.NewProcessCollector.
	"process_cpu_seconds_total":     true,
	"process_resident_memory_bytes": true,
}

// metricsPort is the port every piece agrees on: kube-rbac-proxy's
// --secure-listen-address, its "metrics" port and the Service.
const metricsPort = 9477

// tokenPath is where a container finds the service account token.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// writableHostPaths are the only node paths a pod may mount writable: the
// tracer's state (the audit settings to restore after a kill -9), which
// must outlive the pod.
var writableHostPaths = map[string]bool{"/run/tracer": true}

// capsFor is exactly what each backend's container may add
// (docs/fleet.md): nothing more, and privileged never.
var capsFor = map[string][]corev1.Capability{
	"ebpf":  {"BPF", "PERFMON", "SYS_RESOURCE"},
	"audit": {"AUDIT_CONTROL", "AUDIT_READ"},
}

// serviceMonitor is the part of monitoring.coreos.com/v1 ServiceMonitor
// these manifests use; strict unmarshalling rejects any other field, so a
// typo cannot pass as an unknown field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Path            string `json:"path"`
			Scheme          string `json:"scheme"`
			BearerTokenFile string `json:"bearerTokenFile"`
			TLSConfig       *struct {
				CA *struct {
					Secret *corev1.SecretKeySelector `json:"secret"`
				} `json:"ca"`
				ServerName         string `json:"serverName"`
				InsecureSkipVerify bool   `json:"insecureSkipVerify"`
			} `json:"tlsConfig"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Relabelings   []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
				Action       string   `json:"action"`
			} `json:"relabelings"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// kustomization is the part of kustomize's Kustomization (and Component)
// these files use.
type kustomization struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Namespace  string       `json:"namespace"`
	Resources  []string     `json:"resources"`
	Components []string     `json:"components"`
	Images     []imageEntry `json:"images"`
}

// imageEntry is one of a kustomization's images: what kustomize puts in
// place of every container image named Name.
type imageEntry struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

// issuer is the part of cert-manager.io/v1 Issuer these manifests use.
type issuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		SelfSigned *struct{} `json:"selfSigned"`
		CA         *struct {
			SecretName string `json:"secretName"`
		} `json:"ca"`
	} `json:"spec"`
}

// certificate is the part of cert-manager.io/v1 Certificate these
// manifests use.
type certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		IsCA        bool             `json:"isCA"`
		CommonName  string           `json:"commonName"`
		SecretName  string           `json:"secretName"`
		DNSNames    []string         `json:"dnsNames"`
		IPAddresses []string         `json:"ipAddresses"`
		URIs        []string         `json:"uris"`
		Usages      []string         `json:"usages"`
		Duration    *metav1.Duration `json:"duration"`
		RenewBefore *metav1.Duration `json:"renewBefore"`
		PrivateKey  *struct {
			Algorithm      string `json:"algorithm"`
			Size           int    `json:"size"`
			RotationPolicy string `json:"rotationPolicy"`
		} `json:"privateKey"`
		IssuerRef struct {
			Group string `json:"group"`
			Kind  string `json:"kind"`
			Name  string `json:"name"`
		} `json:"issuerRef"`
	} `json:"spec"`
}

// manifests holds every object of kubernetes/, decoded strictly.
type manifests struct {
	namespaces      []corev1.Namespace
	serviceAccounts []corev1.ServiceAccount
	clusterRoles    []rbacv1.ClusterRole
	roleBindings    []rbacv1.ClusterRoleBinding
	daemonSets      []appsv1.DaemonSet
	services        []corev1.Service
	monitors        []serviceMonitor
	configMaps      []corev1.ConfigMap
	issuers         []issuer
	certificates    []certificate
	kustomize       *kustomization
	files           []string
}

func load(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kubernetes/: %v", err)
	}
	var m manifests
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("\n---")) {
			t.Errorf("%s: one object per file, please", f)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		strict := func(into any) {
			if err := yaml.UnmarshalStrict(data, into); err != nil {
				t.Errorf("%s: %s %s: %v", f, tm.APIVersion, tm.Kind, err)
			}
		}
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 Namespace":
			decodeTo(strict, &m.namespaces)
		case "v1 ServiceAccount":
			decodeTo(strict, &m.serviceAccounts)
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			decodeTo(strict, &m.clusterRoles)
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			decodeTo(strict, &m.roleBindings)
		case "apps/v1 DaemonSet":
			decodeTo(strict, &m.daemonSets)
		case "v1 Service":
			decodeTo(strict, &m.services)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			decodeTo(strict, &m.monitors)
		case "v1 ConfigMap":
			decodeTo(strict, &m.configMaps)
		case "cert-manager.io/v1 Issuer":
			decodeTo(strict, &m.issuers)
		case "cert-manager.io/v1 Certificate":
			decodeTo(strict, &m.certificates)
		case "kustomize.config.k8s.io/v1beta1 Kustomization":
			var o kustomization
			strict(&o)
			m.kustomize = &o
			continue
		default:
			t.Errorf("%s: unexpected object %s %s", f, tm.APIVersion, tm.Kind)
		}
		m.files = append(m.files, filepath.Base(f))
	}
	return m
}

// decodeTo decodes one object with strict and appends it to list.
func decodeTo[T any](strict func(into any), list *[]T) {
	var o T
	strict(&o)
	*list = append(*list, o)
}

func TestObjectsWellFormed(t *testing.T) {
	m := load(t)
	if len(m.namespaces) != 1 || len(m.daemonSets) != 2 || len(m.services) != 1 || len(m.monitors) != 1 ||
		len(m.serviceAccounts) != 1 || len(m.clusterRoles) != 1 || len(m.roleBindings) != 1 {
		t.Fatalf("want 1 Namespace, 2 DaemonSets, 1 Service, 1 ServiceMonitor, 1 ServiceAccount, 1 ClusterRole, 1 ClusterRoleBinding; have %d, %d, %d, %d, %d, %d, %d",
			len(m.namespaces), len(m.daemonSets), len(m.services), len(m.monitors),
			len(m.serviceAccounts), len(m.clusterRoles), len(m.roleBindings))
	}
	ns := m.namespaces[0].Name
	if lvl := m.namespaces[0].Labels["pod-security.kubernetes.io/enforce"]; lvl != "privileged" {
		t.Errorf("namespace %s: Pod Security level %q; hostPID and hostPath need privileged", ns, lvl)
	}
	metas := []metav1.ObjectMeta{m.namespaces[0].ObjectMeta, m.services[0].ObjectMeta, m.monitors[0].ObjectMeta,
		m.serviceAccounts[0].ObjectMeta}
	for _, o := range m.configMaps {
		metas = append(metas, o.ObjectMeta)
	}
	for _, o := range m.issuers {
		metas = append(metas, o.ObjectMeta)
	}
	for _, o := range m.certificates {
		metas = append(metas, o.ObjectMeta)
	}
	for _, ds := range m.daemonSets {
		metas = append(metas, ds.ObjectMeta, ds.Spec.Template.ObjectMeta)
	}
	// Cluster-scoped: no namespace, and a name that says whose they are.
	for _, om := range []metav1.ObjectMeta{m.clusterRoles[0].ObjectMeta, m.roleBindings[0].ObjectMeta} {
		if om.Namespace != "" || !strings.HasPrefix(om.Name, "tracer-") {
			t.Errorf("cluster-scoped %s: namespace %q; want none, and a name starting tracer-", om.Name, om.Namespace)
		}
		checkLabels(t, om.Name, om.Labels)
	}
	for i, om := range metas {
		if i > 0 && om.Namespace != ns && om.Name != "" {
			t.Errorf("%s: namespace %q, want %q", om.Name, om.Namespace, ns)
		}
		if om.Name != "" {
			for _, msg := range validation.IsDNS1123Label(om.Name) {
				t.Errorf("name %q: %s", om.Name, msg)
			}
		}
		checkLabels(t, om.Name, om.Labels)
	}
}

func checkLabels(t *testing.T, what string, ls map[string]string) {
	t.Helper()
	for k, v := range ls {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s: label key %q: %s", what, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: label %s value %q: %s", what, k, v, msg)
		}
	}
}

func TestDaemonSets(t *testing.T) {
	m := load(t)
	seen := map[string]bool{}
	var images []string
	for _, ds := range m.daemonSets {
		t.Run(ds.Name, func(t *testing.T) {
			spec := ds.Spec.Template.Spec
			sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
			if err != nil {
				t.Fatalf("selector: %v", err)
			}
			if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
				t.Errorf("selector %s does not match the pod template's labels %v", sel, ds.Spec.Template.Labels)
			}
			if !spec.HostPID {
				t.Error("hostPID must be true: events carry node PIDs, and audit talks only to the initial PID namespace")
			}
			c, proxy, ok := podContainers(spec)
			if !ok {
				t.Fatalf("containers %v: want tracer and kube-rbac-proxy", containerNames(spec.Containers))
			}
			backend := flagValue(c.Args, "--backend")
			if _, ok := capsFor[backend]; !ok || seen[backend] {
				t.Fatalf("--backend %q: want one DaemonSet each for ebpf and audit", backend)
			}
			seen[backend] = true
			if len(c.Args) == 0 || c.Args[0] != "watch" {
				t.Errorf("args %v: want the watch command", c.Args)
			}
			images = append(images, c.Image)
			for _, ic := range spec.InitContainers {
				images = append(images, ic.Image)
				checkSecurity(t, ic.Name, ic.SecurityContext, nil)
			}
			checkSecurity(t, c.Name, c.SecurityContext, capsFor[backend])
			if spec.SecurityContext != nil && spec.SecurityContext.SELinuxOptions != nil {
				t.Error("no pod-level SELinux overrides expected")
			}
			if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
				t.Error("set a memory limit and a CPU request")
			}
			checkMetricsPath(t, c, proxy)
			checkMetricsTLS(t, m, spec, c, proxy)

			// Volumes: every mount has a volume; host paths are
			// read-only but for the tracer's state directory.
			vols := map[string]corev1.Volume{}
			for _, v := range spec.Volumes {
				vols[v.Name] = v
			}
			for _, ct := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
				checkMounts(t, ct, vols)
			}
			var hostPaths []string
			for _, v := range spec.Volumes {
				if v.HostPath != nil {
					hostPaths = append(hostPaths, v.HostPath.Path)
				}
			}
			slices.Sort(hostPaths)
			want := map[string][]string{
				"ebpf":  {"/run/containerd", "/run/crio", "/sys/kernel/btf", "/sys/kernel/debug", "/sys/kernel/tracing"},
				"audit": {"/run/containerd", "/run/crio", "/run/tracer"},
			}[backend]
			if !slices.Equal(hostPaths, want) {
				t.Errorf("host paths %v, want %v", hostPaths, want)
			}
			// The audit backend records what it changed under /run/tracer;
			// cleanup, run first in a fresh pod, must read the same node
			// directory, and the root filesystem is read-only.
			if backend == "audit" {
				if len(spec.InitContainers) != 1 || !slices.Equal(spec.InitContainers[0].Args, []string{"cleanup"}) {
					t.Fatalf("init containers %v: want one running tracer cleanup", containerNames(spec.InitContainers))
				}
				for _, ct := range []corev1.Container{spec.InitContainers[0], c} {
					if v := mountedAt(ct, vols, "/run/tracer"); v == nil || v.HostPath == nil || v.HostPath.Path != "/run/tracer" {
						t.Errorf("%s: mount the node's /run/tracer at /run/tracer", ct.Name)
					}
				}
			}
			checkToken(t, spec, proxy, vols, m.serviceAccounts[0].Name)
			if backend == "audit" && !spec.HostNetwork {
				t.Error("audit needs hostNetwork: the kernel multicasts audit records only in the initial network namespace")
			}
			if backend == "ebpf" && spec.HostNetwork {
				t.Error("ebpf does not need hostNetwork")
			}
		})
	}
	if len(slices.Compact(slices.Sorted(slices.Values(images)))) != 1 {
		t.Errorf("containers use different images: %v", images)
	}
	checkAffinity(t, m.daemonSets)
}

// checkAffinity makes sure every node runs at most one of the two
// DaemonSets: audit where tracer/backend=audit, none where it is off (a
// node being benchmarked), ebpf everywhere else.
func checkAffinity(t *testing.T, dss []appsv1.DaemonSet) {
	t.Helper()
	for _, node := range []map[string]string{
		{},
		{"tracer/backend": "audit"},
		{"tracer/backend": "ebpf"},
		{"tracer/backend": "off"},
		{"kubernetes.io/hostname": "n1"},
	} {
		var runs []string
		for _, ds := range dss {
			if schedulable(t, ds.Spec.Template.Spec, node) {
				c, _, _ := podContainers(ds.Spec.Template.Spec)
				runs = append(runs, flagValue(c.Args, "--backend"))
			}
		}
		want := []string{"ebpf"}
		switch node["tracer/backend"] {
		case "audit":
			want = []string{"audit"}
		case "off":
			want = nil
		}
		if !slices.Equal(runs, want) {
			t.Errorf("node labelled %v runs %v, want %v", node, runs, want)
		}
	}
}

// schedulable evaluates nodeSelector and required node affinity for a Linux node.
func schedulable(t *testing.T, spec corev1.PodSpec, nodeLabels map[string]string) bool {
	t.Helper()
	ls := labels.Set(maps.Clone(nodeLabels))
	ls["kubernetes.io/os"] = "linux"
	if !labels.SelectorFromSet(spec.NodeSelector).Matches(ls) {
		return false
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil ||
		spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ok := true
		for _, e := range term.MatchExpressions {
			r, err := labels.NewRequirement(e.Key, selectionOps[e.Operator], e.Values)
			if err != nil {
				t.Fatalf("affinity %+v: %v", e, err)
			}
			ok = ok && r.Matches(ls)
		}
		if ok {
			return true
		}
	}
	return false
}

var selectionOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
}

// checkSecurity: not privileged, everything dropped, exactly want added.
func checkSecurity(t *testing.T, name string, sc *corev1.SecurityContext, want []corev1.Capability) {
	t.Helper()
	if sc == nil {
		t.Fatalf("%s: no securityContext", name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: set allowPrivilegeEscalation: false", name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: set readOnlyRootFilesystem: true", name)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Fatalf("%s: capabilities must drop ALL", name)
	}
	for _, c := range sc.Capabilities.Add {
		if !knownCaps[c] {
			t.Errorf("%s: unknown capability %q (names go without CAP_)", name, c)
		}
	}
	if want != nil && !slices.Equal(sc.Capabilities.Add, want) {
		t.Errorf("%s: adds %v, want exactly %v", name, sc.Capabilities.Add, want)
	}
	if slices.Contains(sc.Capabilities.Add, "SYS_ADMIN") {
		t.Errorf("%s: CAP_SYS_ADMIN is what CAP_BPF and CAP_PERFMON avoid", name)
	}
}

var knownCaps = map[corev1.Capability]bool{
	"AUDIT_CONTROL": true, "AUDIT_READ": true, "AUDIT_WRITE": true, "BPF": true, "PERFMON": true,
	"SYS_RESOURCE": true, "SYS_ADMIN": true, "SYS_PTRACE": true, "NET_ADMIN": true, "DAC_READ_SEARCH": true,
	"CHECKPOINT_RESTORE": true, "IPC_LOCK": true,
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func TestServiceAndMonitor(t *testing.T) {
	m := load(t)
	svc := m.services[0]
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service clusterIP %q: want None (headless), so every pod is scraped", svc.Spec.ClusterIP)
	}
	for _, ds := range m.daemonSets {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
			t.Errorf("Service selector %v misses DaemonSet %s's pods", svc.Spec.Selector, ds.Name)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != metricsPort ||
		svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("Service ports %+v: want metrics %d -> metrics", svc.Spec.Ports, metricsPort)
	}

	sm := m.monitors[0]
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selector %s does not select Service %s (labels %v)", sel, svc.Name, svc.Labels)
	}
	if !slices.Equal(sm.Spec.NamespaceSelector.MatchNames, []string{svc.Namespace}) {
		t.Errorf("ServiceMonitor namespaces %v, want [%s]", sm.Spec.NamespaceSelector.MatchNames, svc.Namespace)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "metrics" || ep.Path != "/metrics" {
		t.Errorf("endpoint %s%s, want port metrics path /metrics", ep.Port, ep.Path)
	}
	// The dashboard selects by the node label this relabeling adds.
	found := false
	for _, r := range ep.Relabelings {
		found = found || (slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_pod_node_name"}) && r.TargetLabel == "node")
	}
	if !found {
		t.Error("ServiceMonitor must relabel __meta_kubernetes_pod_node_name to node")
	}
}

func TestKustomizationListsEverything(t *testing.T) {
	m := load(t)
	if m.kustomize == nil {
		t.Fatal("no kustomization.yaml")
	}
	got := slices.Sorted(slices.Values(m.kustomize.Resources))
	want := slices.Sorted(slices.Values(m.files))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want every manifest %v", got, want)
	}
	if m.kustomize.Namespace != m.namespaces[0].Name {
		t.Errorf("kustomization namespace %q, want %q", m.kustomize.Namespace, m.namespaces[0].Name)
	}
	// The images are set in one place, the component ../images, which
	// both kustomizations include, and never in a kustomization itself.
	for _, dir := range []string{"kubernetes", "bench"} {
		k := loadKustomization(t, dir)
		if !slices.Equal(k.Components, []string{"../images"}) || len(k.Images) != 0 {
			t.Errorf("%s/kustomization.yaml: components %v, images %+v: want the images from component ../images only", dir, k.Components, k.Images)
		}
	}
	if k := loadKustomization(t, "images"); k.Kind != "Component" || len(k.Resources) != 0 {
		t.Errorf("images/kustomization.yaml: kind %q with resources %v: want a Component with images only", k.Kind, k.Resources)
	}
}

// loadKustomization reads dir/kustomization.yaml strictly.
func loadKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// dashboard is the part of Grafana's dashboard model the checks read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile("grafana/tracer-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return d
}

func TestDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard needs a uid and a title")
	}
	// The panels the issue asks for.
	for _, want := range []string{"Events per second by type", "Lost events per second by stage", "Audit backlog", "Tracer CPU"} {
		if !slices.ContainsFunc(d.Panels, func(p panel) bool { return p.Title == want }) {
			t.Errorf("no panel %q", want)
		}
	}
	exprs := 0
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource must be the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs++
			names := metricNames(tg.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q: no metric in %q", p.Title, tg.Expr)
			}
			for _, n := range names {
				if !exportedMetrics[n] {
					t.Errorf("panel %q uses %s, which the tracer does not export", p.Title, n)
				}
			}
		}
	}
	for _, v := range d.Templating.List {
		for _, n := range metricNames(strings.TrimSuffix(strings.TrimPrefix(v.Definition, "label_values("), ", node)")) {
			if !exportedMetrics[n] {
				t.Errorf("variable %s uses %s, which the tracer does not export", v.Name, n)
			}
		}
	}
	if exprs < 8 {
		t.Errorf("only %d queries found", exprs)
	}
}

// TestDashboardQueriesParse hands every query to promtool as a recording
// rule, which parses it with Prometheus' own PromQL parser.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		// make test installs it (make deps) and says so: a failure there.
		if os.Getenv("TRACER_DEPS_INSTALLED") == "1" {
			t.Fatal("promtool not installed (Debian package prometheus, make deps installs it): cannot parse the dashboard's PromQL")
		}
		t.Skip("promtool not installed (Debian package prometheus): cannot parse the dashboard's PromQL")
	}
	d := loadDashboard(t)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			expr := grafanaVars.Replace(tg.Expr)
			js, _ := json.Marshal(expr)
			fmt.Fprintf(&b, "      - record: dashboard:q%d\n        expr: %s\n", n, js)
			n++
		}
	}
	f := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, b.String())
	}
	if !strings.Contains(string(out), fmt.Sprintf("%d rules found", n)) {
		t.Errorf("promtool did not check %d rules:\n%s", n, out)
	}
}

// grafanaVars replaces Grafana's variables with values PromQL accepts.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$node", ".*")

var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	braces     = regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]`)
	numbers    = regexp.MustCompile(`\b\d[0-9a-zA-Z.]*`) // 0, 1.5, 5m, 1e3
	labelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	ident      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
)

// promqlWords are PromQL's keywords, which are not metric names.
var promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}

// metricNames returns the metric names in a PromQL expression: identifiers
// left after strings, label matchers, ranges, grouping lists, functions
// and keywords are taken out.
func metricNames(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = braces.ReplaceAllString(s, " ")
	s = labelLists.ReplaceAllString(s, " ")
	s = numbers.ReplaceAllString(s, " ")
	var names []string
	for _, m := range ident.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || promqlWords[strings.ToLower(m)] {
			continue // a function call or keyword
		}
		names = append(names, m)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`sum by (type) (rate(tracer_events_total{node=~"$node", job="x_total"}[5m])) / on (job) group_left() tracer_build_info and process_cpu_seconds_total offset 1m > 0.5`)
	want := []string{"tracer_events_total", "tracer_build_info", "process_cpu_seconds_total"}
	if !slices.Equal(got, want) {
		t.Errorf("metricNames = %v, want %v", got, want)
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	var froms []string
	for l := range strings.Lines(s) {
		if f := strings.Fields(l); len(f) > 0 && strings.EqualFold(f[0], "FROM") {
			froms = append(froms, strings.TrimSpace(l))
		}
	}
	if len(froms) != 2 || !strings.Contains(froms[0], " AS build") {
		t.Errorf("want a two-stage build (golang AS build, then a small base); FROM lines: %v", froms)
	}
	for _, want := range []string{"./cmd/tracer", "CGO_ENABLED=0", "COPY --from=build", "ENTRYPOINT", "main.version"} {
		if !strings.Contains(s, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// The build stage's Go must be able to build the module.
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goLine == nil || !strings.Contains(s, "GO_VERSION="+string(goLine[1])) {
		t.Errorf("Dockerfile's GO_VERSION does not match the module's go %s", goLine[1])
	}
}

// TestBenchDaemonSet checks bench/daemonset-bench.yaml, the idle pods that
// docs/fleet.md runs `tracer bench` in: both backends' capabilities and
// nothing more, only on nodes picked for benchmarking.
func TestBenchDaemonSet(t *testing.T) {
	data, err := os.ReadFile("bench/daemonset-bench.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(data, &ds); err != nil {
		t.Fatalf("bench/daemonset-bench.yaml: %v", err)
	}
	m := load(t)
	if ds.Namespace != m.namespaces[0].Name {
		t.Errorf("namespace %q, want %q", ds.Namespace, m.namespaces[0].Name)
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("selector %v does not match the template's labels %v (%v)", ds.Spec.Selector, ds.Spec.Template.Labels, err)
	}
	// The metrics Service must not select the bench pods.
	if labels.SelectorFromSet(m.services[0].Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Error("the metrics Service selects the bench pods")
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID || !spec.HostNetwork {
		t.Error("bench needs hostPID and hostNetwork (audit multicast, the node's hostname)")
	}
	if spec.NodeSelector["tracer/bench"] != "true" {
		t.Errorf("nodeSelector %v: want tracer/bench=true", spec.NodeSelector)
	}
	c := spec.Containers[0]
	if tc, _, _ := podContainers(m.daemonSets[0].Spec.Template.Spec); c.Image != tc.Image {
		t.Errorf("image %s differs from the DaemonSets'", c.Image)
	}
	if !c.Resources.Limits.Cpu().IsZero() {
		t.Error("a CPU limit would distort bench's timings")
	}
	checkSecurity(t, c.Name, c.SecurityContext, append(slices.Clone(capsFor["ebpf"]), capsFor["audit"]...))
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	checkMounts(t, c, vols)
	// The root filesystem is read-only: every place bench writes is a
	// volume. Scratch (its work directory and event logs under /var/tmp,
	// workloads' files under /tmp, results) goes away with the pod; the
	// audit state must stay on the node for tracer cleanup.
	for _, dir := range []string{"/results", "/tmp", "/var/tmp"} {
		if v := mountedAt(c, vols, dir); v == nil || v.EmptyDir == nil {
			t.Errorf("bench writes under %s: mount an emptyDir there", dir)
		}
	}
	if v := mountedAt(c, vols, "/run/tracer"); v == nil || v.HostPath == nil || v.HostPath.Path != "/run/tracer" {
		t.Error("bench's audit mode records what it changed under /run/tracer: mount the node's /run/tracer there")
	}
}

// podContainers returns the tracer container and its kube-rbac-proxy.
func podContainers(spec corev1.PodSpec) (tracer, proxy corev1.Container, ok bool) {
	var n int
	for _, c := range spec.Containers {
		switch c.Name {
		case "tracer":
			tracer, n = c, n+1
		case "kube-rbac-proxy":
			proxy, n = c, n+1
		}
	}
	return tracer, proxy, n == 2 && len(spec.Containers) == 2
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// mountedAt returns the volume container c mounts at path, or nil.
func mountedAt(c corev1.Container, vols map[string]corev1.Volume, path string) *corev1.Volume {
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == path {
			if v, ok := vols[vm.Name]; ok {
				return &v
			}
		}
	}
	return nil
}

// checkMounts: every mount has a volume, host paths are mounted read-only
// but for writableHostPaths, which the kubelet must create if missing.
func checkMounts(t *testing.T, c corev1.Container, vols map[string]corev1.Volume) {
	t.Helper()
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("%s: mount %s has no volume", c.Name, vm.Name)
			continue
		}
		if v.HostPath == nil {
			continue
		}
		if !vm.ReadOnly && !writableHostPaths[v.HostPath.Path] {
			t.Errorf("%s: host path %s mounted writable", c.Name, v.HostPath.Path)
		}
		if writableHostPaths[v.HostPath.Path] && (v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate) {
			t.Errorf("%s: host path %s: type DirectoryOrCreate, a fresh node has none", c.Name, v.HostPath.Path)
		}
	}
}

// checkMetricsPath: the tracer serves its metrics on loopback only (with
// hostNetwork any other address is open on the node's network, without
// authentication); kube-rbac-proxy serves them on metricsPort over TLS to
// the clients Kubernetes authorizes, and lets only /healthz through
// without, for the kubelet's readiness probe.
func checkMetricsPath(t *testing.T, c, proxy corev1.Container) {
	t.Helper()
	host, port, err := net.SplitHostPort(flagValue(c.Args, "--metrics-addr"))
	if err != nil || host != "127.0.0.1" {
		t.Errorf("tracer --metrics-addr %q: want 127.0.0.1:PORT (%v)", flagValue(c.Args, "--metrics-addr"), err)
	}
	if len(c.Ports) != 0 {
		t.Errorf("tracer exposes ports %+v: only kube-rbac-proxy should", c.Ports)
	}
	if p := strconv.Itoa(metricsPort); port == p {
		t.Errorf("tracer and kube-rbac-proxy both want port %s", p)
	}
	if up := flagValue(proxy.Args, "--upstream"); up != "https://127.0.0.1:"+port+"/" {
		t.Errorf("kube-rbac-proxy --upstream %q, want https://127.0.0.1:%s/ (the tracer's listener speaks only TLS)", up, port)
	}
	if l := flagValue(proxy.Args, "--secure-listen-address"); !strings.HasSuffix(l, ":"+strconv.Itoa(metricsPort)) {
		t.Errorf("kube-rbac-proxy --secure-listen-address %q, want port %d", l, metricsPort)
	}
	if ig := flagValue(proxy.Args, "--ignore-paths"); ig != "/healthz" {
		t.Errorf("kube-rbac-proxy --ignore-paths %q: only /healthz may skip authorization", ig)
	}
	if flagValue(proxy.Args, "--insecure-listen-address") != "" || flagValue(proxy.Args, "--allow-paths") != "" ||
		slices.ContainsFunc(proxy.Args, func(a string) bool { return strings.Contains(a, "insecure") }) {
		t.Error("kube-rbac-proxy: no plain HTTP listener, no --allow-paths, nothing insecure")
	}
	if len(proxy.Ports) != 1 || proxy.Ports[0].Name != "metrics" || proxy.Ports[0].ContainerPort != metricsPort {
		t.Errorf("kube-rbac-proxy ports %+v: want one named metrics on %d", proxy.Ports, metricsPort)
	}
	for _, p := range proxy.Ports {
		for _, msg := range validation.IsValidPortName(p.Name) {
			t.Errorf("port name %q: %s", p.Name, msg)
		}
	}
	rp := proxy.ReadinessProbe
	if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/healthz" || rp.HTTPGet.Port.String() != "metrics" ||
		rp.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("kube-rbac-proxy readinessProbe %+v: want GET https /healthz on port metrics (through to the tracer)", rp)
	}
	checkSecurity(t, proxy.Name, proxy.SecurityContext, []corev1.Capability{})
	if sc := proxy.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Error("kube-rbac-proxy: run it as a non-root user")
	}
	if proxy.Resources.Limits.Memory().IsZero() || proxy.Resources.Requests.Cpu().IsZero() {
		t.Error("kube-rbac-proxy: set a memory limit and a CPU request")
	}
}

// checkToken: the pod runs as the tracer's service account, but only
// kube-rbac-proxy gets its token; the tracer has no business with the API.
func checkToken(t *testing.T, spec corev1.PodSpec, proxy corev1.Container, vols map[string]corev1.Volume, sa string) {
	t.Helper()
	if spec.ServiceAccountName != sa {
		t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, sa)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken must be false: mount the token into kube-rbac-proxy alone")
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		v := mountedAt(c, vols, tokenPath)
		if c.Name != proxy.Name {
			if v != nil {
				t.Errorf("%s mounts a service account token", c.Name)
			}
			continue
		}
		if v == nil || v.Projected == nil || !slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool {
			return p.ServiceAccountToken != nil && p.ServiceAccountToken.Path == "token"
		}) {
			t.Errorf("%s: mount a projected service account token at %s", c.Name, tokenPath)
		}
	}
}

// TestMetricsAccess: the ServiceMonitor scrapes the proxy over TLS with
// Prometheus' token, and the proxy's service account may do exactly what
// the proxy needs: review tokens and access.
func TestMetricsAccess(t *testing.T) {
	m := load(t)
	ep := m.monitors[0].Spec.Endpoints[0]
	if ep.Scheme != "https" || ep.BearerTokenFile != tokenPath+"/token" || ep.TLSConfig == nil {
		t.Fatalf("ServiceMonitor endpoint scheme %q token %q tls %+v: want https with Prometheus' service account token", ep.Scheme, ep.BearerTokenFile, ep.TLSConfig)
	}
	// Prometheus verifies the proxy's certificate: the tracer's CA, and
	// the name the certificate has (it connects to pod IPs, which it has not).
	tc := ep.TLSConfig
	if tc.InsecureSkipVerify {
		t.Error("ServiceMonitor: insecureSkipVerify; verify the proxy's certificate with the tracer's CA")
	}
	if tc.CA == nil || tc.CA.Secret == nil || tc.CA.Secret.Name != m.caSecret() || m.caSecret() == "" || tc.CA.Secret.Key != "ca.crt" {
		t.Errorf("ServiceMonitor tlsConfig ca %+v: want key ca.crt of the tracer's CA Secret %q", tc.CA, m.caSecret())
	}
	svc := m.services[0]
	if want := svc.Name + "." + svc.Namespace + ".svc"; tc.ServerName != want {
		t.Errorf("ServiceMonitor tlsConfig serverName %q, want %q", tc.ServerName, want)
	}
	var serving *certificate
	for _, ds := range m.daemonSets {
		_, proxy, _ := podContainers(ds.Spec.Template.Spec)
		vols := map[string]corev1.Volume{}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			vols[v.Name] = v
		}
		if ref, ok := fileIn(proxy, vols, flagValue(proxy.Args, "--tls-cert-file")); ok {
			serving = m.certFor(ref.Name)
		}
		if serving == nil || !slices.Contains(serving.Spec.DNSNames, tc.ServerName) {
			t.Errorf("%s: kube-rbac-proxy's certificate (--tls-cert-file) must be a Certificate for %q", ds.Name, tc.ServerName)
		}
	}
	if len(m.serviceAccounts) != 1 || len(m.roleBindings) != 1 || len(m.clusterRoles) != 1 {
		t.Fatal("want a ServiceAccount, a ClusterRole and a ClusterRoleBinding for kube-rbac-proxy")
	}
	sa := m.serviceAccounts[0]
	if sa.Namespace != m.namespaces[0].Name {
		t.Errorf("ServiceAccount in namespace %q", sa.Namespace)
	}
	rb := m.roleBindings[0]
	if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != m.clusterRoles[0].Name || rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("ClusterRoleBinding refers to %+v, want ClusterRole %s", rb.RoleRef, m.clusterRoles[0].Name)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("ClusterRoleBinding subjects %+v, want ServiceAccount %s/%s", rb.Subjects, sa.Namespace, sa.Name)
	}
	var got []string
	for _, r := range m.clusterRoles[0].Rules {
		if len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("rule %+v: only whole resources expected", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got = append(got, g+"/"+res+":"+v)
				}
			}
		}
	}
	slices.Sort(got)
	want := []string{"authentication.k8s.io/tokenreviews:create", "authorization.k8s.io/subjectaccessreviews:create"}
	if !slices.Equal(got, want) {
		t.Errorf("ClusterRole grants %v, want exactly %v", got, want)
	}
}

// webConfig is the part of the exporter-toolkit web configuration
// (tracer's --web.config.file) these manifests use; strict unmarshalling
// rejects a misspelt key, which exporter-toolkit would reject at start.
type webConfig struct {
	TLSServerConfig *struct {
		CertFile          string   `json:"cert_file"`
		KeyFile           string   `json:"key_file"`
		ClientAuthType    string   `json:"client_auth_type"`
		ClientCAFile      string   `json:"client_ca_file"`
		ClientAllowedSans []string `json:"client_allowed_sans"`
		MinVersion        string   `json:"min_version"`
	} `json:"tls_server_config"`
	BasicAuthUsers map[string]string `json:"basic_auth_users"`
}

// fileRef is where a file a container reads comes from: key Key of the
// Secret or ConfigMap Name.
type fileRef struct {
	Kind, Name, Key string
}

// fileIn resolves path in container c to the Secret or ConfigMap key a
// mounted secret, configMap or projected volume puts there.
func fileIn(c corev1.Container, vols map[string]corev1.Volume, path string) (fileRef, bool) {
	for _, vm := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/")
		if !ok || vm.SubPath != "" {
			continue
		}
		v, ok := vols[vm.Name]
		if !ok {
			return fileRef{}, false
		}
		find := func(kind, name string, items []corev1.KeyToPath) (fileRef, bool) {
			if len(items) == 0 {
				return fileRef{kind, name, rel}, true
			}
			for _, it := range items {
				if it.Path == rel {
					return fileRef{kind, name, it.Key}, true
				}
			}
			return fileRef{}, false
		}
		switch {
		case v.Secret != nil:
			return find("Secret", v.Secret.SecretName, v.Secret.Items)
		case v.ConfigMap != nil:
			return find("ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					if r, ok := find("Secret", src.Secret.Name, src.Secret.Items); ok {
						return r, true
					}
				}
				if src.ConfigMap != nil {
					if r, ok := find("ConfigMap", src.ConfigMap.Name, src.ConfigMap.Items); ok {
						return r, true
					}
				}
			}
		}
		return fileRef{}, false
	}
	return fileRef{}, false
}

// mountedSecrets are the Secrets container c mounts, sorted.
func mountedSecrets(c corev1.Container, vols map[string]corev1.Volume) []string {
	var out []string
	for _, vm := range c.VolumeMounts {
		v := vols[vm.Name]
		if v.Secret != nil {
			out = append(out, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					out = append(out, src.Secret.Name)
				}
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// certFor is the cert-manager Certificate that writes Secret name.
func (m manifests) certFor(name string) *certificate {
	for i := range m.certificates {
		if m.certificates[i].Spec.SecretName == name {
			return &m.certificates[i]
		}
	}
	return nil
}

// caSecret is the Secret of the tracer's CA: the isCA Certificate the CA
// Issuer signs with; "" if the chain is not there.
func (m manifests) caSecret() string {
	for _, is := range m.issuers {
		if is.Spec.CA != nil {
			if c := m.certFor(is.Spec.CA.SecretName); c != nil && c.Spec.IsCA {
				return c.Spec.SecretName
			}
		}
	}
	return ""
}

// issuedByCA: Certificate c is signed by the tracer's CA Issuer.
func (m manifests) issuedByCA(c *certificate) bool {
	for _, is := range m.issuers {
		if is.Name == c.Spec.IssuerRef.Name && c.Spec.IssuerRef.Kind == "Issuer" && is.Spec.CA != nil &&
			is.Spec.CA.SecretName == m.caSecret() {
			return true
		}
	}
	return false
}

// checkMetricsTLS: nobody but kube-rbac-proxy can read the tracer's
// metrics, although every user of a hostNetwork pod's node can connect to
// its loopback port: the tracer serves them only over TLS and only to a
// client certificate of the tracer's CA with kube-rbac-proxy's SAN
// (--web.config.file), and kube-rbac-proxy verifies the tracer's
// certificate and presents that client certificate. Each key is mounted
// only into the container it belongs to; the CA's key into none.
func checkMetricsTLS(t *testing.T, m manifests, spec corev1.PodSpec, c, proxy corev1.Container) {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	wcPath := flagValue(c.Args, "--web.config.file")
	if wcPath == "" || flagValue(c.Args, "--metrics-addr") == "" {
		t.Fatalf("tracer --metrics-addr %q without --web.config.file: the loopback listener is open to every user of the node",
			flagValue(c.Args, "--metrics-addr"))
	}
	ref, ok := fileIn(c, vols, wcPath)
	if !ok || ref.Kind != "ConfigMap" {
		t.Fatalf("tracer --web.config.file %s: no ConfigMap key mounted there", wcPath)
	}
	var data string
	for _, cm := range m.configMaps {
		if cm.Name == ref.Name {
			data, ok = cm.Data[ref.Key]
		}
	}
	if !ok {
		t.Fatalf("tracer --web.config.file %s: ConfigMap %s has no key %s", wcPath, ref.Name, ref.Key)
	}
	var wc webConfig
	if err := yaml.UnmarshalStrict([]byte(data), &wc); err != nil {
		t.Fatalf("web config %s/%s: %v", ref.Name, ref.Key, err)
	}
	tc := wc.TLSServerConfig
	if tc == nil || tc.ClientAuthType != "RequireAndVerifyClientCert" || tc.ClientCAFile == "" || tc.CertFile == "" || tc.KeyFile == "" {
		t.Fatalf("web config %+v: want tls_server_config with cert_file, key_file, client_auth_type RequireAndVerifyClientCert and client_ca_file", tc)
	}
	if len(tc.ClientAllowedSans) == 0 {
		t.Error("web config: name kube-rbac-proxy's client certificate in client_allowed_sans, or any certificate of the CA is a client")
	}
	dir := filepath.Dir(wcPath)
	inDir := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	srvCert, ok1 := fileIn(c, vols, inDir(tc.CertFile))
	srvKey, ok2 := fileIn(c, vols, inDir(tc.KeyFile))
	clientCA, ok3 := fileIn(c, vols, inDir(tc.ClientCAFile))
	if !ok1 || !ok2 || !ok3 || srvCert.Kind != "Secret" || srvKey != (fileRef{"Secret", srvCert.Name, "tls.key"}) ||
		srvCert.Key != "tls.crt" || clientCA != (fileRef{"Secret", srvCert.Name, "ca.crt"}) {
		t.Fatalf("web config cert_file %s, key_file %s, client_ca_file %s: want tls.crt, tls.key and ca.crt of one cert-manager Secret mounted in the tracer (have %v %v %v)",
			tc.CertFile, tc.KeyFile, tc.ClientCAFile, srvCert, srvKey, clientCA)
	}
	host, _, _ := net.SplitHostPort(flagValue(c.Args, "--metrics-addr"))
	if sc := m.certFor(srvCert.Name); sc == nil || !m.issuedByCA(sc) || !slices.Contains(sc.Spec.IPAddresses, host) ||
		!slices.Contains(sc.Spec.Usages, "server auth") || slices.Contains(sc.Spec.Usages, "client auth") {
		t.Errorf("Secret %s: want a Certificate of the tracer's CA for IP %s, usage server auth only", srvCert.Name, host)
	}

	// kube-rbac-proxy: verifies the tracer, presents its client certificate.
	upCA, ok1 := fileIn(proxy, vols, flagValue(proxy.Args, "--upstream-ca-file"))
	clCert, ok2 := fileIn(proxy, vols, flagValue(proxy.Args, "--upstream-client-cert-file"))
	clKey, ok3 := fileIn(proxy, vols, flagValue(proxy.Args, "--upstream-client-key-file"))
	if !ok1 || !ok2 || !ok3 || clCert.Kind != "Secret" || clCert.Key != "tls.crt" || clKey != (fileRef{"Secret", clCert.Name, "tls.key"}) ||
		upCA != (fileRef{"Secret", clCert.Name, "ca.crt"}) {
		t.Fatalf("kube-rbac-proxy --upstream-ca-file, --upstream-client-cert-file, --upstream-client-key-file: want ca.crt, tls.crt, tls.key of one cert-manager Secret mounted in the proxy (have %v %v %v)", upCA, clCert, clKey)
	}
	if cc := m.certFor(clCert.Name); cc == nil || !m.issuedByCA(cc) || !slices.Contains(cc.Spec.Usages, "client auth") ||
		slices.Contains(cc.Spec.Usages, "server auth") || len(cc.Spec.URIs) == 0 ||
		!slices.ContainsFunc(cc.Spec.URIs, func(u string) bool { return slices.Contains(tc.ClientAllowedSans, u) }) {
		t.Errorf("Secret %s: want a Certificate of the tracer's CA, usage client auth only, with a URI SAN of the web config's client_allowed_sans %v", clCert.Name, tc.ClientAllowedSans)
	}
	for _, san := range tc.ClientAllowedSans {
		if cc := m.certFor(clCert.Name); cc != nil && !slices.Contains(cc.Spec.URIs, san) && !slices.Contains(cc.Spec.DNSNames, san) {
			t.Errorf("web config allows client SAN %s, which kube-rbac-proxy's certificate does not have", san)
		}
	}
	servCert, ok1 := fileIn(proxy, vols, flagValue(proxy.Args, "--tls-cert-file"))
	servKey, ok2 := fileIn(proxy, vols, flagValue(proxy.Args, "--tls-private-key-file"))
	if !ok1 || !ok2 || servCert.Kind != "Secret" || servCert.Key != "tls.crt" || servKey != (fileRef{"Secret", servCert.Name, "tls.key"}) {
		t.Fatalf("kube-rbac-proxy --tls-cert-file, --tls-private-key-file: want tls.crt, tls.key of a cert-manager Secret mounted in the proxy, not a self-signed certificate (have %v %v)", servCert, servKey)
	}
	if sc := m.certFor(servCert.Name); sc == nil || !m.issuedByCA(sc) || !slices.Contains(sc.Spec.Usages, "server auth") ||
		slices.Contains(sc.Spec.Usages, "client auth") {
		t.Errorf("Secret %s: want a Certificate of the tracer's CA, usage server auth only", servCert.Name)
	}
	if len(slices.Compact(slices.Sorted(slices.Values([]string{srvCert.Name, clCert.Name, servCert.Name, m.caSecret()})))) != 4 {
		t.Errorf("the tracer's serving, the proxy's client and serving certificates and the CA need a Secret each: %s, %s, %s, %s",
			srvCert.Name, clCert.Name, servCert.Name, m.caSecret())
	}

	// Keys only where they are used.
	want := map[string][]string{
		c.Name:     {srvCert.Name},
		proxy.Name: slices.Sorted(slices.Values([]string{clCert.Name, servCert.Name})),
	}
	for _, ct := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		if got := mountedSecrets(ct, vols); !slices.Equal(got, want[ct.Name]) {
			t.Errorf("%s mounts Secrets %v, want exactly %v", ct.Name, got, want[ct.Name])
		}
	}
	// The proxy (not root) must be able to read its files, and nobody else.
	for _, v := range spec.Volumes {
		mode := func(m *int32) {
			if m == nil || *m&0o007 != 0 {
				t.Errorf("volume %s: set defaultMode without any bits for others (0440)", v.Name)
			}
		}
		switch {
		case v.Secret != nil:
			mode(v.Secret.DefaultMode)
		case v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool { return p.Secret != nil }):
			mode(v.Projected.DefaultMode)
		}
	}
	if sc := proxy.SecurityContext; sc == nil || sc.RunAsGroup == nil || spec.SecurityContext == nil ||
		spec.SecurityContext.FSGroup == nil || *spec.SecurityContext.FSGroup != *sc.RunAsGroup {
		t.Error("pod fsGroup must be kube-rbac-proxy's group, or it cannot read its 0440 certificate files")
	}
}

// TestCertificates: the cert-manager chain. A self-signed Issuer makes the
// CA, a CA Issuer signs every other Certificate with it; the CA's key
// stays in its Secret.
func TestCertificates(t *testing.T) {
	m := load(t)
	ca := m.caSecret()
	if ca == "" {
		t.Fatal("no CA Issuer with an isCA Certificate: want a self-signed Issuer, a CA Certificate and a CA Issuer (cert-manager)")
	}
	for _, c := range m.certificates {
		if c.Spec.PrivateKey == nil || c.Spec.PrivateKey.Algorithm == "" {
			t.Errorf("Certificate %s: name the key algorithm", c.Name)
		}
		if c.Spec.IssuerRef.Group != "cert-manager.io" {
			t.Errorf("Certificate %s: issuerRef group %q, want cert-manager.io", c.Name, c.Spec.IssuerRef.Group)
		}
		if c.Spec.IsCA {
			var self bool
			for _, is := range m.issuers {
				self = self || (is.Name == c.Spec.IssuerRef.Name && is.Spec.SelfSigned != nil)
			}
			if !self || c.Spec.SecretName != ca {
				t.Errorf("CA Certificate %s: want it issued by the self-signed Issuer, into %s", c.Name, ca)
			}
			continue
		}
		if !m.issuedByCA(&c) {
			t.Errorf("Certificate %s: issued by %+v, want the CA Issuer", c.Name, c.Spec.IssuerRef)
		}
		if len(c.Spec.Usages) == 0 {
			t.Errorf("Certificate %s: name its usages (server auth or client auth)", c.Name)
		}
	}
}

// TestNoInsecureSkipVerify: nothing in the manifests (or the scrape config
// docs/fleet.md gives) turns TLS verification off.
func TestNoInsecureSkipVerify(t *testing.T) {
	files, _ := filepath.Glob("*/*.yaml")
	insecure := regexp.MustCompile(`(?i)insecure[-_]?skip[-_]?verify|upstream-insecure`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := insecure.FindIndex(data); loc != nil {
			t.Errorf("%s: %s: verify TLS, with the tracer's CA", f, data[loc[0]:loc[1]])
		}
	}
	data, err := os.ReadFile("../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	if loc := regexp.MustCompile(`(?i)insecure_?skip_?verify:\s*true`).FindIndex(data); loc != nil {
		t.Errorf("docs/fleet.md: %s", data[loc[0]:loc[1]])
	}
}

// placeholderDigest is what images/kustomization.yaml holds until the real
// digests are set (docs/fleet.md): not an image anyone can pull.
const placeholderDigest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

var pinned = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// setImage is what kustomize's images transformer makes of ref.
func setImage(ref string, entries []imageEntry) string {
	name, digest, _ := strings.Cut(ref, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	for _, e := range entries {
		if e.Name != name {
			continue
		}
		if e.NewName != "" {
			name = e.NewName
		}
		if e.NewTag != "" {
			tag = e.NewTag
		}
		if e.Digest != "" {
			digest = e.Digest
		}
	}
	out := name
	if tag != "" {
		out += ":" + tag
	}
	if digest != "" {
		out += "@" + digest
	}
	return out
}

// renderedImages are the container images of kustomization dir as
// kustomize renders them: by kubectl kustomize or kustomize when one is
// installed, else by setImage over the images component.
func renderedImages(t *testing.T, dir string, raw []string, comp kustomization) []string {
	t.Helper()
	var want []string
	for _, r := range raw {
		want = append(want, setImage(r, comp.Images))
	}
	want = slices.Compact(slices.Sorted(slices.Values(want)))
	var cmd *exec.Cmd
	if p, err := exec.LookPath("kustomize"); err == nil {
		cmd = exec.Command(p, "build", dir)
	} else if p, err := exec.LookPath("kubectl"); err == nil {
		cmd = exec.Command(p, "kustomize", dir)
	} else {
		t.Logf("neither kustomize nor kubectl installed: images of %s as setImage renders them", dir)
		return want
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:- )?image: (\S+)$`).FindAllSubmatch(out, -1) {
		got = append(got, string(m[1]))
	}
	got = slices.Compact(slices.Sorted(slices.Values(got)))
	if !slices.Equal(got, want) {
		t.Errorf("%v renders images %v; setImage says %v", cmd.Args, got, want)
	}
	return got
}

// TestImagesPinnedByDigest: every container the manifests run (DaemonSets
// and bench) pulls its image by digest, set in one place, the images
// component. It is skipped, naming the reason, while that component holds
// the placeholder digest.
func TestImagesPinnedByDigest(t *testing.T) {
	m := load(t)
	comp := loadKustomization(t, "images")
	var raw []string
	for _, ds := range m.daemonSets {
		for _, c := range append(slices.Clone(ds.Spec.Template.Spec.InitContainers), ds.Spec.Template.Spec.Containers...) {
			raw = append(raw, c.Image)
		}
	}
	var rawBench []string
	bench := loadDaemonSet(t, "bench/daemonset-bench.yaml")
	for _, c := range append(slices.Clone(bench.Spec.Template.Spec.InitContainers), bench.Spec.Template.Spec.Containers...) {
		rawBench = append(rawBench, c.Image)
	}
	images := append(renderedImages(t, "kubernetes", raw, comp), renderedImages(t, "bench", rawBench, comp)...)
	placeholder := false
	for _, img := range images {
		if !pinned.MatchString(img) {
			t.Errorf("image %s is not pinned by digest: set it in images/kustomization.yaml (docs/fleet.md)", img)
		}
		placeholder = placeholder || strings.HasSuffix(img, "@"+placeholderDigest)
	}
	for _, e := range comp.Images {
		if e.Digest == "" {
			t.Errorf("images/kustomization.yaml: %s has no digest", e.Name)
		}
	}
	if placeholder {
		t.Skipf("images/kustomization.yaml still holds the placeholder digest %s (no registry was reachable where these manifests were written, and none was recorded): "+
			"set the real ones with kustomize edit set image (docs/fleet.md, 1. Build the image); rendered: %v", placeholderDigest, images)
	}
}
