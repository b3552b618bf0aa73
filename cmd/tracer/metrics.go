// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/metrics"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// metricsOptions are the metrics flags besides --metrics-addr.
type metricsOptions struct {
	byComm bool // --metrics-comm
	// webConfig is --web.config.file; "" means webConfigFile.
	webConfig string
}

// webConfigFile is --web.config.file of watch and trace (one command runs
// per process): TLS and basic auth for the metrics server, in the
// Prometheus exporters' web configuration format.
var webConfigFile string

// metricsMaxConns is the most connections the metrics server holds at
// once; more wait in the kernel's listen queue, costing tracer no
// descriptor. Without it, idle connections of any local user would take
// the descriptors tracer opens /proc files with, and events would lose
// their exec_id and cgroup. A scraper or two and kube-rbac-proxy need a
// handful.
const metricsMaxConns = 128

// metricsTimeouts end connections that send nothing, send slowly or read
// slowly, so that the slots above come free: a request's headers within
// 10 s, all of it within 30 s, its answer written within 30 s; a keep-alive
// connection idle for 2 minutes (longer than any scrape interval, so a
// Prometheus keeps its connection) is closed.
var metricsTimeouts = struct{ readHeader, read, write, idle time.Duration }{
	readHeader: 10 * time.Second, read: 30 * time.Second, write: 30 * time.Second, idle: 2 * time.Minute,
}

const webConfigHelp = "serve metrics with TLS and/or basic auth as configured in FILE (Prometheus web configuration format, as node_exporter's --web.config.file)"

// startMetrics serves /metrics and /healthz on addr for the pipeline and
// backend until ctx ends; addr "" serves nothing. Call it before the backend
// starts (it may add a sink to p) and call ready once the rules or probes
// are in place: /healthz answers 503 until then. The address is bound here,
// so a bad or busy one fails before anything is installed.
func startMetrics(ctx context.Context, addr string, p *tracer.Pipeline, b tracer.Backend, opts ...metricsOptions) (ready func(), err error) {
	var o metricsOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.webConfig == "" {
		o.webConfig = webConfigFile
	}
	if err := checkMetricsFlags(addr, o); err != nil {
		return nil, err
	}
	if addr == "" {
		return func() {}, nil
	}
	srv, err := metrics.New(p, b, metrics.Options{Version: version, ByComm: o.byComm})
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: srv.Handler(),
		ReadHeaderTimeout: metricsTimeouts.readHeader, ReadTimeout: metricsTimeouts.read,
		WriteTimeout: metricsTimeouts.write, IdleTimeout: metricsTimeouts.idle,
		// Handshake errors (a scanner, a client speaking plain HTTP to
		// TLS) are the client's business: logged at debug level only.
		ErrorLog: slog.NewLogLogger(webLogger().Handler(), slog.LevelDebug)}
	webFlags := &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebConfigFile: &o.webConfig}
	serve := func(ln net.Listener) {
		ln = netutil.LimitListener(ln, metricsMaxConns)
		slog.Debug("serving metrics", "addr", ln.Addr().String(), "web_config", o.webConfig)
		go func() {
			if err := web.Serve(ln, hs, webFlags, webLogger()); err != nil && !errors.Is(err, http.ErrServerClosed) {
				slog.Error("metrics server stopped", "addr", addr, "err", err)
			}
		}()
	}
	ln, err := listenMetrics(addr)
	switch {
	case err == nil:
		serve(ln)
	case addrBusy(err):
		// Any user of the node can bind a free port first; exiting would
		// keep the service down (exit 2 is not restarted), so the watch
		// goes on and the metrics come once the address is free.
		srv.ListenFailed()
		slog.Warn("cannot serve metrics yet: the address is held by another process; watching goes on, binding is retried (tracer_metrics_listen_failures_total counts the attempts)",
			"addr", addr, "err", err)
		go retryListen(ctx, addr, srv, serve)
	default:
		return nil, err
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	return srv.SetReady, nil
}

// checkMetricsFlags refuses metrics flags that cannot work: it runs before
// the root check (so that a user without root hears of the value) and
// again before anything is installed. The address is only parsed here;
// whether it is free shows when startMetrics binds it.
func checkMetricsFlags(addr string, o metricsOptions) error {
	if o.webConfig == "" {
		o.webConfig = webConfigFile
	}
	if addr == "" {
		if o.byComm {
			return vocab.Usagef("--metrics-comm needs --metrics-addr HOST:PORT")
		}
		if o.webConfig != "" {
			return vocab.Usagef("--web.config.file needs --metrics-addr HOST:PORT")
		}
		return nil
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if name := filepath.Base(path); path == "" || strings.HasSuffix(path, "/") || name == "." || name == ".." {
			return vocab.Usagef("--metrics-addr %s names no socket file: give unix:PATH, e.g. unix:/run/tracer/metrics.sock", addr)
		}
	} else if _, port, err := net.SplitHostPort(addr); err != nil {
		return vocab.Usagef("bad --metrics-addr %s: %v (give HOST:PORT, e.g. 127.0.0.1:9477, or unix:PATH)", addr, err)
	} else if _, err := net.LookupPort("tcp", port); err != nil {
		return vocab.Usagef("bad --metrics-addr %s: no port %q (give HOST:PORT, e.g. 127.0.0.1:9477, or unix:PATH)", addr, port)
	}
	// A bad file fails here, before anything is installed, not at the
	// first scrape. The file is read again for each connection and
	// request, so certificates and passwords can change while tracer runs.
	if err := web.Validate(o.webConfig); err != nil {
		// Its key may be root's alone: without root, unreadable is
		// not yet wrong (the root check comes next).
		if os.Geteuid() != 0 && (errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied")) {
			return nil
		}
		return vocab.Usagef("bad --web.config.file %s: %v", o.webConfig, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return nil
}

// The binds of a busy metrics address are retried after 500ms, then
// twice as long each time, up to every 15s.
const (
	metricsRetryFirst = 500 * time.Millisecond
	metricsRetryMax   = 15 * time.Second
)

// retryListen binds addr until it succeeds or ctx ends, counting each
// failure, and serves on it then.
func retryListen(ctx context.Context, addr string, srv *metrics.Server, serve func(net.Listener)) {
	delay := metricsRetryFirst
	for failures := 1; ; failures++ {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		ln, err := listenMetrics(addr)
		if err == nil {
			if ctx.Err() != nil {
				ln.Close()
				return
			}
			slog.Info("serving metrics now", "addr", addr, "failed_attempts", failures)
			serve(ln)
			return
		}
		srv.ListenFailed()
		if addrBusy(err) {
			slog.Debug("metrics address still held", "addr", addr, "err", err)
		} else {
			slog.Warn("cannot serve metrics; binding is retried", "addr", addr, "err", err)
		}
		delay = min(2*delay, metricsRetryMax)
	}
}

// addrBusy reports whether a bind failed for a reason that may pass:
// another process holds the address, or the address is not on the node
// yet (a network still coming up at boot).
func addrBusy(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EADDRNOTAVAIL)
}

// listenMetrics binds --metrics-addr: HOST:PORT, or unix:PATH, a socket
// only root and the socket directory's group may connect to (0660; a pod
// shares it with kube-rbac-proxy alone, where a port on a hostNetwork
// pod's loopback is open to every user of the node). An address another
// process holds is an error addrBusy reports; any other failure is a
// usage error.
func listenMetrics(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		ln, err := net.Listen("tcp", addr)
		if addrBusy(err) {
			return nil, err
		}
		if err != nil {
			return nil, vocab.Usagef("cannot serve metrics on --metrics-addr %s: %v (give HOST:PORT, e.g. 127.0.0.1:9477, the port docs/fleet.md gives tracer, or unix:PATH)", addr, err)
		}
		return ln, nil
	}
	ln, err := listenUnix(path)
	if addrBusy(err) {
		return nil, err
	}
	if err != nil {
		return nil, vocab.Usagef("cannot serve metrics on --metrics-addr %s: %v", addr, err)
	}
	return ln, nil
}

// listenUnix listens on a Unix socket at path, made 0660, through no
// symbolic link another user controls (host.OpenDirNoFollow): the
// socket is bound by its name in the directory opened so, and bind itself
// never follows a link. A socket a previous tracer left there (a
// restarted container keeps its emptyDir) is replaced; anything else is
// not.
func listenUnix(path string) (net.Listener, error) {
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." {
		return nil, errors.New("name a socket file")
	}
	if dir == "" {
		dir = "."
	}
	dfd, err := host.OpenDirNoFollow(dir)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			unix.Close(dfd)
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		// A tracer that still serves there keeps its socket: this one
		// waits, as for a busy port.
		if c, err := net.Dial("unix", "/proc/self/fd/"+strconv.Itoa(dfd)+"/"+name); err == nil {
			c.Close()
			unix.Close(dfd)
			return nil, fmt.Errorf("%s: a live process serves on it: %w", path, syscall.EADDRINUSE)
		}
		if err := unix.Unlinkat(dfd, name, 0); err != nil {
			unix.Close(dfd)
			return nil, fmt.Errorf("removing the old socket: %w", err)
		}
	}
	// Bound through the descriptor's /proc link, so the path is not
	// looked up again; the umask makes the socket 0660 from the start
	// (a chmod after bind would leave a window). Nothing else creates
	// files while metrics start.
	old := unix.Umask(0o117)
	ln, err := net.Listen("unix", "/proc/self/fd/"+strconv.Itoa(dfd)+"/"+name)
	unix.Umask(old)
	if err != nil {
		unix.Close(dfd)
		return nil, err
	}
	// The /proc name is dfd's: the listener removes the socket by its
	// name in the directory it was bound in instead.
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	return &unixListener{UnixListener: ul, dir: dfd, name: name}, nil
}

// unixListener removes its socket from its directory when closed.
type unixListener struct {
	*net.UnixListener
	dir  int
	name string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		_ = unix.Unlinkat(l.dir, l.name, 0)
		unix.Close(l.dir)
	})
	return err
}

// webLogger is the exporter toolkit's logger: it says "Listening on" and
// "TLS is enabled" at info level, which would clutter trace's report on
// stderr, so those show only with --log-level debug.
func webLogger() *slog.Logger {
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		return slog.Default()
	}
	return slog.New(minLevel{slog.Default().Handler(), slog.LevelWarn})
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// removeStaleSockets removes the Unix sockets in dir that nothing listens
// on any more: a killed tracer's --metrics-addr unix:dir/NAME (the
// package's is /run/tracer/metrics.sock). A socket that answers, and
// anything that is not a socket, stays.
func removeStaleSockets(dir string) []string {
	dfd, err := host.OpenDirNoFollow(dir)
	if err != nil {
		return nil
	}
	defer unix.Close(dfd)
	ents, err := os.ReadDir("/proc/self/fd/" + strconv.Itoa(dfd))
	if err != nil {
		return nil
	}
	var done []string
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Fstatat(dfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			continue
		}
		c, err := net.Dial("unix", "/proc/self/fd/"+strconv.Itoa(dfd)+"/"+e.Name())
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) && unix.Unlinkat(dfd, e.Name(), 0) == nil {
			done = append(done, "removed the socket "+filepath.Join(dir, e.Name())+", which nothing serves on any more")
		}
	}
	return done
}
