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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// exportedMetrics are the metric names the tracer serves at /metrics
// (SPEC.md "Metrics"; tracer/metrics exports them), plus the standard Go and
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

// metricsPort is the port every piece agrees on: the tracer's
// --metrics-addr, the containers' "metrics" port and the Service.
const metricsPort = 9477

// capsFor is exactly what each backend's container may add (SPEC.md,
// docs/fleet.md): nothing more, and privileged never.
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
			Port          string `json:"port"`
			Path          string `json:"path"`
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

// kustomization is the part of kustomize's Kustomization these files use.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name   string `json:"name"`
		NewTag string `json:"newTag"`
	} `json:"images"`
}

// manifests holds every object of kubernetes/, decoded strictly.
type manifests struct {
	namespaces []corev1.Namespace
	daemonSets []appsv1.DaemonSet
	services   []corev1.Service
	monitors   []serviceMonitor
	kustomize  *kustomization
	files      []string
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
			var o corev1.Namespace
			strict(&o)
			m.namespaces = append(m.namespaces, o)
		case "apps/v1 DaemonSet":
			var o appsv1.DaemonSet
			strict(&o)
			m.daemonSets = append(m.daemonSets, o)
		case "v1 Service":
			var o corev1.Service
			strict(&o)
			m.services = append(m.services, o)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			var o serviceMonitor
			strict(&o)
			m.monitors = append(m.monitors, o)
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

func TestObjectsWellFormed(t *testing.T) {
	m := load(t)
	if len(m.namespaces) != 1 || len(m.daemonSets) != 2 || len(m.services) != 1 || len(m.monitors) != 1 {
		t.Fatalf("want 1 Namespace, 2 DaemonSets, 1 Service, 1 ServiceMonitor; have %d, %d, %d, %d",
			len(m.namespaces), len(m.daemonSets), len(m.services), len(m.monitors))
	}
	ns := m.namespaces[0].Name
	if lvl := m.namespaces[0].Labels["pod-security.kubernetes.io/enforce"]; lvl != "privileged" {
		t.Errorf("namespace %s: Pod Security level %q; hostPID and hostPath need privileged", ns, lvl)
	}
	metas := []metav1.ObjectMeta{m.namespaces[0].ObjectMeta, m.services[0].ObjectMeta, m.monitors[0].ObjectMeta}
	for _, ds := range m.daemonSets {
		metas = append(metas, ds.ObjectMeta, ds.Spec.Template.ObjectMeta)
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
			if len(spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(spec.Containers))
			}
			c := spec.Containers[0]
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

			// Metrics: flag, container port, probe agree.
			addr := flagValue(c.Args, "--metrics-addr")
			if !strings.HasSuffix(addr, ":"+strconv.Itoa(metricsPort)) {
				t.Errorf("--metrics-addr %q, want port %d", addr, metricsPort)
			}
			if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != metricsPort {
				t.Errorf("ports %+v: want one named metrics on %d", c.Ports, metricsPort)
			}
			for _, p := range c.Ports {
				for _, msg := range validation.IsValidPortName(p.Name) {
					t.Errorf("port name %q: %s", p.Name, msg)
				}
			}
			rp := c.ReadinessProbe
			if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/healthz" || rp.HTTPGet.Port.String() != "metrics" {
				t.Errorf("readinessProbe %+v: want GET /healthz on port metrics", rp)
			}
			if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
				t.Error("set a memory limit and a CPU request")
			}

			// Volumes: every mount has a volume, host paths are read-only.
			vols := map[string]corev1.Volume{}
			for _, v := range spec.Volumes {
				vols[v.Name] = v
			}
			for _, vm := range c.VolumeMounts {
				v, ok := vols[vm.Name]
				if !ok {
					t.Errorf("mount %s has no volume", vm.Name)
					continue
				}
				if v.HostPath != nil && !vm.ReadOnly {
					t.Errorf("host path %s mounted writable", v.HostPath.Path)
				}
			}
			var hostPaths []string
			for _, v := range spec.Volumes {
				if v.HostPath != nil {
					hostPaths = append(hostPaths, v.HostPath.Path)
				}
			}
			slices.Sort(hostPaths)
			want := map[string][]string{
				"ebpf":  {"/sys/kernel/btf", "/sys/kernel/debug", "/sys/kernel/tracing"},
				"audit": nil,
			}[backend]
			if !slices.Equal(hostPaths, want) {
				t.Errorf("host paths %v, want %v", hostPaths, want)
			}
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
				runs = append(runs, flagValue(ds.Spec.Template.Spec.Containers[0].Args, "--backend"))
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
	img := m.daemonSets[0].Spec.Template.Spec.Containers[0].Image
	if len(m.kustomize.Images) != 1 || !strings.HasPrefix(img, m.kustomize.Images[0].Name+":") {
		t.Errorf("kustomization images %+v do not name the containers' image %s", m.kustomize.Images, img)
	}
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
	if c.Image != m.daemonSets[0].Spec.Template.Spec.Containers[0].Image {
		t.Errorf("image %s differs from the DaemonSets'", c.Image)
	}
	if !c.Resources.Limits.Cpu().IsZero() {
		t.Error("a CPU limit would distort bench's timings")
	}
	checkSecurity(t, c.Name, c.SecurityContext, append(slices.Clone(capsFor["ebpf"]), capsFor["audit"]...))
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
	}
	for _, vm := range c.VolumeMounts {
		if !vols[vm.Name] {
			t.Errorf("mount %s has no volume", vm.Name)
		}
	}
}
