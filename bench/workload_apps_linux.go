// SPDX-License-Identifier: Apache-2.0

//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tracer-dev/tracer/tracer/vocab"
)

// An application workload is a benchmark a node really runs, whose own
// figure (requests/s, events/s, bogo ops/s) bench reads from its output and
// compares across modes. Each needs its Debian packages; bench runs only the
// ones asked for by name (or all installed ones with --workload apps).
type app struct {
	name, desc string
	// packages are the Debian packages that provide progs, rhel the RHEL
	// ones (sysbench is in EPEL there).
	packages, rhel []string
	progs          []string
	// start is the count calibration begins with.
	start     int64
	countNoun string
	// perCount is how many of the metric's operations one count makes
	// (redis-benchmark runs two tests of count requests).
	perCount float64
	server   func(ctx context.Context, dir string, place func(*exec.Cmd)) (*appServer, error)
	metric   func() *Metric
	// argv is the client's command line for count n against srv (nil for
	// workloads without a server).
	argv func(n int64, srv *appServer) []string
	// nobody runs the workload as user nobody: stress-ng's exec stressor
	// refuses root.
	nobody bool
}

// The process stressors run one instance per CPU, so that watching
// competes with the workload for the CPUs, as on a busy node; a single
// instance would leave the tracer an idle CPU and hide its cost.
func stressApp(stressor, desc string, start int64, extra ...string) app {
	return app{
		name: "stress-" + stressor, desc: "stress-ng " + stressor + " stressor, one instance per CPU: " + desc,
		packages: []string{"stress-ng"}, rhel: []string{"stress-ng"}, progs: []string{"stress-ng"}, start: start, countNoun: "bogo ops", perCount: 1,
		metric: func() *Metric { return stressMetric(stressor) },
		argv: func(n int64, _ *appServer) []string {
			return append([]string{"stress-ng", "--" + stressor, strconv.Itoa(runtime.NumCPU()),
				"--" + stressor + "-ops", strconv.FormatInt(n, 10), "--metrics-brief", "--temp-path", os.TempDir()}, extra...)
		},
	}
}

var apps = []app{
	{
		name: "redis", desc: "redis-server on a unix socket, redis-benchmark SET and GET (50 clients)",
		packages: []string{"redis-server", "redis-tools"}, rhel: []string{"redis"}, progs: []string{"redis-server", "redis-benchmark"},
		start: 2000, countNoun: "requests per test", perCount: 2,
		server: startRedis, metric: redisMetric,
		argv: func(n int64, srv *appServer) []string {
			return []string{"redis-benchmark", "-s", srv.addr, "-t", "set,get", "-n", strconv.FormatInt(n, 10), "-q"}
		},
	},
	{
		name: "nginx", desc: "nginx on 127.0.0.1 serving a 4 KiB static file, ab without keep-alive (16 concurrent)",
		packages: []string{"nginx-light", "apache2-utils"}, rhel: []string{"nginx", "httpd-tools"}, progs: []string{"nginx", "ab"},
		start: 500, countNoun: "requests", perCount: 1,
		server: startNginx, metric: abMetric,
		argv: func(n int64, srv *appServer) []string {
			return []string{"ab", "-q", "-n", strconv.FormatInt(n, 10), "-c", "16", "http://" + srv.addr + "/index.html"}
		},
	},
	{
		name: "sysbench-cpu", desc: "sysbench cpu (prime search), one thread per CPU",
		packages: []string{"sysbench"}, rhel: []string{"sysbench"}, progs: []string{"sysbench"}, start: 200, countNoun: "events", perCount: 1,
		metric: sysbenchMetric,
		argv: func(n int64, _ *appServer) []string {
			return []string{"sysbench", "cpu", "--threads=" + strconv.Itoa(runtime.NumCPU()), "--events=" + strconv.FormatInt(n, 10), "--time=0", "run"}
		},
	},
	{
		name: "sysbench-threads", desc: "sysbench threads (lock, yield, unlock), one thread per CPU",
		packages: []string{"sysbench"}, rhel: []string{"sysbench"}, progs: []string{"sysbench"}, start: 200, countNoun: "events", perCount: 1,
		metric: sysbenchMetric,
		argv: func(n int64, _ *appServer) []string {
			return []string{"sysbench", "threads", "--threads=" + strconv.Itoa(runtime.NumCPU()), "--events=" + strconv.FormatInt(n, 10), "--time=0", "run"}
		},
	},
	stressApp("fork", "fork and reap a child", 200),
	stressApp("vfork", "vfork and reap a child", 500),
	// One child per iteration (the default is 4096 at once), execve only,
	// without the thread that exec from a pthread would add.
	func() app {
		a := stressApp("exec", "fork, exec stress-ng itself, reap (run as nobody: it refuses root)", 20,
			"--exec-max", "1", "--exec-method", "execve", "--exec-no-pthread")
		a.nobody = true
		return a
	}(),
	stressApp("kill", "kill() signals to a child that ignores them", 500),
	stressApp("sigq", "sigqueue() signals to a child", 1000),
	stressApp("clone", "clone and reap a child, one at a time", 50, "--clone-max", "1"),
}

// Apps lists the application workload names, in the order bench runs them.
func Apps() []string {
	var names []string
	for _, a := range apps {
		names = append(names, a.name)
	}
	return names
}

func findApp(name string) (app, bool) {
	for _, a := range apps {
		if a.name == name {
			return a, true
		}
	}
	return app{}, false
}

// AppMissing says what an application workload needs that the node lacks
// ("" when it can run): its programs, and the packages to install.
func AppMissing(name string) string {
	a, ok := findApp(name)
	if !ok {
		return fmt.Sprintf("unknown workload %q", name)
	}
	var missing []string
	for _, p := range a.progs {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("workload %s needs %s: install the packages %s on Debian (make bench-apps does), %s on RHEL",
		name, strings.Join(missing, " and "), strings.Join(a.packages, " "), strings.Join(a.rhel, " "))
}

// InstalledApps lists the application workloads the node can run.
func InstalledApps() []string {
	var out []string
	for _, n := range Apps() {
		if AppMissing(n) == "" {
			out = append(out, n)
		}
	}
	return out
}

// NewApp returns application workload name with count n (0: its
// calibration's starting count).
func NewApp(name string, n int64) (*Workload, error) {
	a, ok := findApp(name)
	if !ok {
		return nil, fmt.Errorf("unknown application workload %q: use %s", name, strings.Join(Apps(), ", "))
	}
	if n <= 0 {
		n = a.start
	}
	w := &Workload{
		Name: name, Desc: fmt.Sprintf("%s; %d %s", a.desc, n, a.countNoun),
		Count: n, Metric: a.metric(),
	}
	sv := &serverSlot{}
	if a.server != nil {
		w.server = func(ctx context.Context, dir string, place func(*exec.Cmd)) (func() error, error) {
			srv, err := a.server(ctx, dir, place)
			if err != nil {
				return nil, err
			}
			sv.set(srv)
			return func() error { sv.set(nil); return srv.stop() }, nil
		}
	}
	w.argv = func(string) []string { return a.argv(n, sv.get()) }
	if a.nobody {
		w.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
		w.Dir = "/"
	}
	return w, nil
}

// serverSlot holds the running server a client's command line points at.
type serverSlot struct {
	mu  sync.Mutex
	srv *appServer
}

func (s *serverSlot) set(srv *appServer) { s.mu.Lock(); s.srv = srv; s.mu.Unlock() }

func (s *serverSlot) get() *appServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		// A client without its server would fail on connect; an address
		// nothing listens on says so in its error.
		return &appServer{addr: "not-started"}
	}
	return s.srv
}

// startServer starts w's server, when it has one, in a private directory
// under parent; the returned stop stops and reaps it and removes the
// directory, and may be called more than once.
func (w *Workload) startServer(ctx context.Context, parent string, cg *Cgroup) (func() error, error) {
	if w.server == nil {
		return func() error { return nil }, nil
	}
	dir, err := os.MkdirTemp(parent, w.Name+"-server-")
	if err != nil {
		return nil, fmt.Errorf("making %s's server directory: %w", w.Name, err)
	}
	stop, err := w.server(ctx, dir, func(cmd *exec.Cmd) { inCgroup(cmd, cg) })
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s's server: %w", w.Name, err)
	}
	var once sync.Once
	var serr error
	return func() error {
		once.Do(func() {
			serr = stop()
			if err := os.RemoveAll(dir); serr == nil {
				serr = err
			}
		})
		return serr
	}, nil
}

// appServer is a server bench started for a workload: its own process
// group, killed with bench (Pdeathsig), in the workload cgroup.
type appServer struct {
	cmd  *exec.Cmd
	addr string // unix socket path or host:port
	out  *tailBuffer
	done chan struct{}
}

func startServerCmd(argv []string, dir string, place func(*exec.Cmd)) (*appServer, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	place(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	s := &appServer{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	return s, nil
}

// waitReady waits until dial succeeds, the server exits, or 10 s pass.
func (s *appServer) waitReady(ctx context.Context, network string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout(network, s.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("%s exited: %s", s.cmd.Path, s.out.String())
		case <-ctx.Done():
			_ = s.stop()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.stop()
			return fmt.Errorf("%s does not answer on %s after 10s: %v; %s", s.cmd.Path, s.addr, err, s.out.String())
		}
	}
}

// stop asks the server to end (SIGTERM), kills its process group after 5
// s, and reaps it: a server is never left running.
func (s *appServer) stop() error {
	pg := s.cmd.Process.Pid
	_ = unix.Kill(-pg, unix.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = unix.Kill(-pg, unix.SIGKILL)
		<-s.done
	}
	// Workers the master did not take with it (nginx's, if it was killed).
	_ = unix.Kill(-pg, unix.SIGKILL)
	return nil
}

// startRedis starts redis-server listening on a unix socket only (port 0:
// no TCP), persisting nothing, all files in dir.
func startRedis(ctx context.Context, dir string, place func(*exec.Cmd)) (*appServer, error) {
	sock := filepath.Join(dir, "redis.sock")
	s, err := startServerCmd([]string{"redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", ""}, dir, place)
	if err != nil {
		return nil, err
	}
	s.addr = sock
	return s, s.waitReady(ctx, "unix")
}

const nginxConf = `daemon off;
master_process on;
worker_processes auto;
# The private directory is root's alone (0700): workers running as nobody
# could not read the file.
user root;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path {{dir}}/tmp/body;
	proxy_temp_path {{dir}}/tmp/proxy;
	fastcgi_temp_path {{dir}}/tmp/fastcgi;
	uwsgi_temp_path {{dir}}/tmp/uwsgi;
	scgi_temp_path {{dir}}/tmp/scgi;
	server {
		listen {{addr}};
		root {{dir}}/html;
	}
}
`

// startNginx starts nginx with a configuration of its own (pid, logs and
// temp paths in dir, -e so that not even the startup error log is the
// node's) on a free port of 127.0.0.1, serving a 4 KiB file.
func startNginx(ctx context.Context, dir string, place func(*exec.Cmd)) (*appServer, error) {
	for _, d := range []string{"html", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("making nginx directory: %w", err)
		}
	}
	page := make([]byte, 4096)
	for i := range page {
		page[i] = 'a' + byte(i%26)
	}
	if err := os.WriteFile(filepath.Join(dir, "html", "index.html"), page, 0o600); err != nil {
		return nil, fmt.Errorf("writing nginx's page: %w", err)
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	conf := strings.NewReplacer("{{dir}}", dir, "{{addr}}", addr).Replace(nginxConf)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("writing nginx.conf: %w", err)
	}
	s, err := startServerCmd([]string{"nginx", "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log")}, dir, place)
	if err != nil {
		return nil, err
	}
	s.addr = addr
	if err := s.waitReady(ctx, "tcp"); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return nil, fmt.Errorf("%w %s", err, strings.TrimSpace(string(b)))
	}
	return s, nil
}

// freePort returns 127.0.0.1:PORT with a port the kernel just gave out and
// nobody holds.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}

// The untraced duration an application round is sized to: long enough for
// a server benchmark to pass its warm-up, short enough to interleave.
const (
	AppTarget      = 3 * time.Second
	QuickAppTarget = time.Second
)

// CalibrateApp sizes application workload name so that an untraced run
// lasts at least target, scaling its count by the shortfall as Calibrate
// does. Its server runs for the calibration only.
func CalibrateApp(ctx context.Context, name string, target time.Duration, dir string, cg *Cgroup) (*Workload, float64, error) {
	a, ok := findApp(name)
	if !ok {
		return nil, 0, fmt.Errorf("unknown application workload %q", name)
	}
	n := a.start
	want := target.Seconds()
	for try := 0; ; try++ {
		w, err := NewApp(name, n)
		if err != nil {
			return nil, 0, err
		}
		s, err := runApp(ctx, w, dir, cg)
		if err != nil {
			return nil, 0, fmt.Errorf("calibrating %s: %w", name, err)
		}
		// A run slowed by start-up or by other work on the node can last
		// long enough at a count its own rate says is too small.
		byRate := want * s.Metric / a.perCount
		if s.Elapsed >= want && float64(n) >= byRate/1.5 {
			return w, s.Elapsed, nil
		}
		if try == 12 {
			return nil, 0, fmt.Errorf("calibrating %s: a count of %d still lasts only %.3fs", name, n, s.Elapsed)
		}
		// The workload's own rate sizes it better than its elapsed time,
		// which holds start-up: aim at the rate, grow at most tenfold.
		f := math.Min(10, want/math.Max(s.Elapsed, 1e-3)*1.15)
		if byRate > 0 {
			f = math.Min(10, math.Max(1.15, byRate/float64(n)*1.15))
		}
		n = max(n+1, int64(math.Ceil(float64(n)*f)))
	}
}

// runApp runs w once, untraced, with its server.
func runApp(ctx context.Context, w *Workload, dir string, cg *Cgroup) (Sample, error) {
	stop, err := w.startServer(ctx, dir, cg)
	if err != nil {
		return Sample{}, err
	}
	s, err := runWorkload(ctx, w, &Run{Workload: w}, filepath.Join(dir, "calibrate-tids"), cg)
	return s, errors.Join(err, stop())
}

// expandWorkloads replaces "apps" in names with the installed application
// workloads, and checks that named application workloads can run. Errors
// are usage errors.
func expandWorkloads(names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		switch {
		case n == "apps":
			inst := InstalledApps()
			if len(inst) == 0 {
				return nil, vocab.Usagef("--workload apps: none of %s is installed: install the packages redis-server redis-tools nginx-light apache2-utils sysbench stress-ng on Debian (make bench-apps does), redis nginx httpd-tools sysbench (EPEL) stress-ng on RHEL", strings.Join(Apps(), ", "))
			}
			out = append(out, inst...)
		case isApp(n):
			if why := AppMissing(n); why != "" {
				return nil, vocab.Usagef("%s", why)
			}
			out = append(out, n)
		default:
			out = append(out, n)
		}
	}
	return out, nil
}

func isApp(name string) bool { _, ok := findApp(name); return ok }
