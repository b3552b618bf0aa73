// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/host"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// OTLP defaults. A batch goes out when this many events wait, or on the
// pipeline's next kick (every 100 ms), whichever comes first.
const (
	otlpQueueEvents  = 16384
	otlpBatch        = 1024
	otlpCloseTimeout = 5 * time.Second
	// One request may take this long; a failed one is tried again for up
	// to otlpRetryFor (a collector restarting), while the queue holds
	// what comes meanwhile.
	otlpRequestTimeout = 5 * time.Second
	otlpRetryFor       = 10 * time.Second
	otlpDefaultPort    = "4318"
)

// CheckOTLP checks an otlp://, otlps:// or otlp:/SOCKET --output value
// and the options that go with it, in a one-line usage error. Cleartext
// otlp:// is refused unless o.AllowCleartext: the events name every
// command line, and whoever holds the port while the collector restarts
// (any user of the node, on loopback) would get them. Headers
// (OTEL_EXPORTER_OTLP_HEADERS, an Authorization token) are refused over
// cleartext even then.
func CheckOTLP(target string, o OTLPOptions) error {
	t, err := parseOTLPTarget(target)
	if err != nil {
		return err
	}
	if o.CAFile != "" {
		if !t.secure {
			return vocab.Usagef("--output-ca-file is for otlps:// (TLS): use --output otlps://HOST:PORT or drop --output-ca-file")
		}
		if _, err := loadCA(o.CAFile); err != nil {
			return err
		}
	}
	if !t.cleartext() {
		return nil
	}
	if h := otlpHeadersVar(); h != "" {
		return vocab.Usagef("%s over cleartext %s would hand its headers (tokens) to whoever holds the port: use otlps://%s (TLS) or otlp:/SOCKET", h, target, t.endpoint)
	}
	if !o.AllowCleartext {
		return vocab.Usagef("--output %s is cleartext: every command line would go to whoever holds %s (any user of the node can bind a free port while the collector restarts): use otlps://%s (TLS; --output-ca-file CA.pem pins the collector's CA) or otlp:/SOCKET, or add --allow-cleartext", target, t.endpoint, t.endpoint)
	}
	return nil
}

// OTLPCleartext reports whether target, a valid --output for OTLP, sends
// in cleartext over the network.
func OTLPCleartext(target string) bool {
	t, err := parseOTLPTarget(target)
	return err == nil && t.cleartext()
}

// otlpHeadersVar is the name of the set variable that gives the exporter
// headers, or "".
func otlpHeadersVar() string {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_LOGS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		if strings.TrimSpace(os.Getenv(v)) != "" {
			return v
		}
	}
	return ""
}

// loadCA reads the PEM certificates of --output-ca-file.
func loadCA(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, vocab.Usagef("--output-ca-file: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, vocab.Usagef("--output-ca-file %s holds no PEM certificate: give the CA that signed the collector's certificate", file)
	}
	return pool, nil
}

// OTLPOptions tune an OTLPSink beyond the watch's output options.
type OTLPOptions struct {
	// Version is the resource's service.version.
	Version string
	// QueueEvents bounds the events waiting to be exported (0: 16384).
	QueueEvents int
	// CloseTimeout bounds how long Close waits for the collector (0: 5 s).
	CloseTimeout time.Duration
	// CAFile, for otlps://, is the only CA the collector's certificate
	// may chain to (PEM); "" uses the system's roots, or
	// OTEL_EXPORTER_OTLP_CERTIFICATE.
	CAFile string
	// AllowCleartext lets CheckOTLP pass otlp://HOST:PORT.
	AllowCleartext bool
}

// OTLPSink exports events as OpenTelemetry log records over OTLP/HTTP
// (protobuf): a short message as the body, the event's kernel time as the
// timestamp, and its ECS document's fields as attributes (fieldtable.go:
// the keys and values --format ecs writes, dotted).
//
// Write copies the event into a bounded queue and returns at once: a
// full queue drops the event, counted at stage queue (in block mode,
// Write waits for room until Abort). One goroutine turns queued events
// into records, another exports them in batches; every event of a batch
// the collector did not take (down, refusing, too slow, after retries) is
// counted at stage output. The SDK's own BatchProcessor is not used: its
// queue drops without a count and its export errors go to a global
// handler, where here each record's fate is known.
type OTLPSink struct {
	opts     OutputOptions
	closeFor time.Duration
	exporter sdklog.Exporter
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
	proc     *collectProcessor
	ctx      context.Context // the exports'; cancelled when Close gives up
	cancel   context.CancelFunc
	msg      []byte // the converter goroutine's
	done     chan struct{}
	// q holds copies of the events, bounded by OTLPOptions.QueueEvents
	// and OutputOptions.QueueBytes (eventBytes estimates each: a count
	// alone lets large events take hundreds of MiB).
	q         *queue[*eventBatch]
	closeOnce sync.Once
}

// NewOTLPSink exports to target, an otlp:// or otlps:// URL (HOST:PORT,
// port 4318 when left out, path /v1/logs unless given), or otlp:/SOCKET
// (a Unix socket, path /v1/logs). It does not apply CheckOTLP's policy:
// the caller checks first.
func NewOTLPSink(target string, opts OutputOptions, o OTLPOptions) (*OTLPSink, error) {
	t, err := parseOTLPTarget(target)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if t.secure {
		scheme = "https"
	}
	path := t.path
	if path == "" {
		path = "/v1/logs"
	}
	endpoint := t.endpoint
	if t.socket != "" {
		endpoint = "localhost" // the Host header; the socket is dialled
	}
	// The whole URL, so that --output wins over OTEL_EXPORTER_OTLP_ENDPOINT
	// and _INSECURE; the SDK's other variables (headers, a CA, a client
	// certificate, compression) apply as in any OpenTelemetry SDK.
	eo := []otlploghttp.Option{
		otlploghttp.WithEndpointURL(scheme + "://" + endpoint + path),
		otlploghttp.WithTimeout(otlpRequestTimeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{
			Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: otlpRetryFor,
		}),
	}
	if o.CAFile != "" {
		pool, err := loadCA(o.CAFile)
		if err != nil {
			return nil, err
		}
		tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		// A client certificate from the SDK's variables still applies.
		if cert, ok, err := otlpClientCert(); err != nil {
			return nil, err
		} else if ok {
			tc.Certificates = []tls.Certificate{cert}
		}
		eo = append(eo, otlploghttp.WithTLSClientConfig(tc))
	}
	if t.socket != "" {
		socket := t.socket
		eo = append(eo, otlploghttp.WithHTTPClient(&http.Client{
			Timeout: otlpRequestTimeout,
			Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return dialUnixNoFollow(ctx, socket)
			}},
		}))
	}
	exp, err := otlploghttp.New(context.Background(), eo...)
	if err != nil {
		return nil, fmt.Errorf("making the OTLP exporter: %w", err)
	}
	return newOTLPSink(exp, opts, o)
}

// otlpClientCert loads the client certificate the SDK's variables name,
// which WithTLSClientConfig would otherwise drop.
func otlpClientCert() (tls.Certificate, bool, error) {
	get := func(names ...string) string {
		for _, n := range names {
			if v := os.Getenv(n); v != "" {
				return v
			}
		}
		return ""
	}
	cert := get("OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")
	key := get("OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY")
	if cert == "" || key == "" {
		return tls.Certificate{}, false, nil
	}
	c, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, false, fmt.Errorf("loading the OTLP client certificate: %w", err)
	}
	return c, true, nil
}

// dialUnixNoFollow connects to the Unix socket at path, reached through
// no symbolic link another user controls (host.OpenDirNoFollow): the
// socket is named in the directory opened so.
func dialUnixNoFollow(ctx context.Context, path string) (net.Conn, error) {
	dir, name := filepath.Split(path)
	fd, err := host.OpenDirNoFollow(dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return (&net.Dialer{}).DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd)+"/"+name)
}

// newOTLPSink exports through exp.
func newOTLPSink(exp sdklog.Exporter, opts OutputOptions, o OTLPOptions) (*OTLPSink, error) {
	if o.QueueEvents <= 0 {
		o.QueueEvents = otlpQueueEvents
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = otlpCloseTimeout
	}
	res, err := otlpResource(o.Version)
	if err != nil {
		return nil, err
	}
	proc := &collectProcessor{}
	provider := sdklog.NewLoggerProvider(
		sdklog.WithResource(res),
		sdklog.WithProcessor(proc),
		// An ECS document has a bounded set of fields: keep them all.
		sdklog.WithAttributeCountLimit(-1),
		// Its keys are unique: no need for the SDK to check each record.
		sdklog.WithAllowKeyDuplication(),
	)
	ctx, cancel := context.WithCancel(context.Background())
	s := &OTLPSink{
		opts: opts, closeFor: o.CloseTimeout, exporter: exp, provider: provider,
		logger: provider.Logger("tracer", otellog.WithInstrumentationVersion(o.Version)),
		proc:   proc, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		// What empties the queue is a network round trip, not a disk: in
		// drop mode a full queue drops at once (patience 0).
		q: newQueue(opts, queueShape{
			maxBytes: opts.QueueBytes, maxEvents: o.QueueEvents,
			batchBytes: opts.QueueBytes, batchEvents: otlpBatch,
			slots: o.QueueEvents/otlpBatch + 1,
		}, newEventBatch),
	}
	go s.run()
	return s, nil
}

// otlpResource names the sender: service.name tracer, its version, the
// node. OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME add to or
// override them, as in any OpenTelemetry SDK (a DaemonSet passes
// k8s.node.name that way).
func otlpResource(version string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", "tracer")}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		attrs = append(attrs, attribute.String("host.name", h))
	}
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("making the OTLP resource: %w", err)
	}
	return res, nil
}

// otlpTarget is an --output for OTLP, parsed.
type otlpTarget struct {
	endpoint string // HOST:PORT; "" for a socket
	secure   bool   // otlps://
	path     string // the URL path; "" for /v1/logs
	socket   string // otlp:/SOCKET
}

// cleartext reports whether t sends over the network without TLS.
func (t otlpTarget) cleartext() bool { return t.socket == "" && !t.secure }

// parseOTLPTarget reads otlp://HOST[:PORT][/PATH] (plain HTTP),
// otlps:// (TLS, checked against the system's roots or --output-ca-file) or
// otlp:/SOCKET (plain HTTP on a Unix socket).
func parseOTLPTarget(target string) (otlpTarget, error) {
	bad := func(why string) error {
		return vocab.Usagef("bad --output %q: %s (use otlps://HOST:PORT for TLS, otlp:/SOCKET for a collector's Unix socket, or otlp://HOST:PORT with --allow-cleartext)", target, why)
	}
	if rest, ok := strings.CutPrefix(target, "otlp:"); ok && !strings.HasPrefix(rest, "//") {
		if !strings.HasPrefix(rest, "/") || strings.HasSuffix(rest, "/") {
			return otlpTarget{}, bad("a socket is otlp:/PATH, an absolute path")
		}
		return otlpTarget{socket: filepath.Clean(rest)}, nil
	}
	u, perr := url.Parse(target)
	switch {
	case perr != nil:
		return otlpTarget{}, bad("not a URL")
	case u.Scheme != "otlp" && u.Scheme != "otlps":
		return otlpTarget{}, bad("the scheme is otlp or otlps")
	case u.Host == "" || u.Hostname() == "":
		return otlpTarget{}, bad("no host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return otlpTarget{}, bad("only a host, a port and a path")
	}
	port := u.Port()
	if port == "" {
		port = otlpDefaultPort
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return otlpTarget{}, bad("the port is a number from 1 to 65535")
	}
	t := otlpTarget{endpoint: net.JoinHostPort(u.Hostname(), port), secure: u.Scheme == "otlps"}
	if u.Path != "" && u.Path != "/" {
		t.path = u.Path
	}
	return t, nil
}

// Write queues a copy of e; it never waits in drop mode.
func (s *OTLPSink) Write(e *tracer.Event) error {
	size := eventBytes(e)
	if b, ok := s.q.put(size); ok {
		b.add(e, size)
		s.q.added(size)
	}
	return nil
}

// eventBytes estimates the memory a queued copy of e holds: the event,
// its strings and its slices.
func eventBytes(e *tracer.Event) int {
	n := int(unsafe.Sizeof(*e)) + len(e.Comm) + len(e.Filename) + len(e.Cgroup) + len(e.ContainerID) +
		len(e.Unit) + len(e.TargetComm) + len(e.KilledBy.Comm) +
		len(e.Pod.Name) + len(e.Pod.Namespace) + len(e.Pod.UID) + len(e.Pod.Container) + len(e.Pod.Image) + len(e.Pod.ImageID)
	for _, a := range e.Argv {
		n += int(unsafe.Sizeof(a)) + len(a)
	}
	for _, a := range e.Ancestors {
		n += int(unsafe.Sizeof(a)) + len(a.Comm)
	}
	return n
}

// copyEvent makes dst a copy of src that shares no slice with it.
func copyEvent(dst, src *tracer.Event) {
	argv, anc := dst.Argv[:0], dst.Ancestors[:0]
	*dst = *src
	dst.Argv = append(argv, src.Argv...)
	dst.Ancestors = append(anc, src.Ancestors...)
}

// eventBatch is copies of events on their way to the converter.
type eventBatch struct {
	ev    []tracer.Event // ev[:n]; the slots past n keep their slices for reuse
	n     int
	bytes int
}

func newEventBatch() *eventBatch { return &eventBatch{ev: make([]tracer.Event, 0, otlpBatch)} }

// add copies e in: backends reuse their events' slices.
func (b *eventBatch) add(e *tracer.Event, size int) {
	if b.n < len(b.ev) {
		copyEvent(&b.ev[b.n], e)
	} else {
		var c tracer.Event
		copyEvent(&c, e)
		b.ev = append(b.ev, c)
	}
	b.n++
	b.bytes += size
}

func (b *eventBatch) events() int { return b.n }
func (b *eventBatch) size() int   { return b.bytes }
func (b *eventBatch) reset()      { b.n, b.bytes = 0, 0 }

// Kick has the queued events exported now.
func (s *OTLPSink) Kick() { s.q.kick() }

// Flush waits until every event written so far was exported or counted
// lost, for at most the close timeout, or until Abort.
func (s *OTLPSink) Flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.closeFor)
	defer cancel()
	if !s.q.flush(ctx.Done()) {
		return errors.New("the OTLP collector did not take the events in time")
	}
	return nil
}

// Close exports what is queued, for at most the close timeout (less on
// Abort); whatever did not go out by then is counted lost at stage output.
func (s *OTLPSink) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.closeFor)
		defer cancel()
		s.q.end(ctx.Done())
		select {
		case <-s.done:
		case <-ctx.Done():
		case <-s.opts.Abort:
		}
		// An export still running is cancelled; the exporter goroutine
		// then counts what it held. Should it not return promptly, what
		// is left is counted here.
		s.cancel()
		select {
		case <-s.done:
		case <-time.After(time.Second):
			s.q.abandon()
		}
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		defer scancel()
		_ = s.provider.Shutdown(sctx)
		_ = s.exporter.Shutdown(sctx)
	})
	return nil
}

// Loss reports events dropped by a full queue and events the collector
// did not take.
func (s *OTLPSink) Loss() tracer.OutputLoss {
	return s.q.book.loss()
}

// otlpJob is a batch of records on its way from the converter to the
// sender, with the events of it that never became records.
type otlpJob struct {
	records []sdklog.Record
	failed  int
}

// run is the converter goroutine: it takes the queue, turns its events
// into records and hands them in batches to send, the sender goroutine,
// so that making one batch overlaps sending the last.
func (s *OTLPSink) run() {
	jobs := make(chan otlpJob, 1)
	free := make(chan []sdklog.Record, 3)
	go s.send(jobs, free)
	defer close(jobs)
	var (
		kvs []attribute.KeyValue
		fv  fieldValue
	)
	for b := range s.q.batches() {
		// A batch that grew while the converter was behind goes out in
		// requests of otlpBatch records at most.
		for start := 0; start < b.n; start += otlpBatch {
			part := b.ev[start:min(start+otlpBatch, b.n)]
			if s.ctx.Err() != nil {
				// Close gave up on the collector: count, do not convert.
				jobs <- otlpJob{failed: len(part)}
				continue
			}
			select {
			case s.proc.records = <-free:
			default:
				s.proc.records = make([]sdklog.Record, 0, otlpBatch)
			}
			for i := range part {
				kvs = appendOTLPAttributes(kvs[:0], &part[i], &fv)
				s.emit(&part[i], kvs)
			}
			jobs <- otlpJob{records: s.proc.records}
		}
		// The records hold what they need: the copies may go.
		s.q.release(b)
		s.q.recycle(b)
	}
}

// send is the sender goroutine: it exports each batch and counts it.
func (s *OTLPSink) send(jobs <-chan otlpJob, free chan<- []sdklog.Record) {
	defer close(s.done)
	for j := range jobs {
		s.export(j.records, j.failed)
		clear(j.records) // let the records' attributes go
		select {
		case free <- j.records[:0]:
		default:
		}
	}
}

// emit turns one event into a record (collectProcessor keeps it).
func (s *OTLPSink) emit(e *tracer.Event, kvs []attribute.KeyValue) {
	var r otellog.Record
	r.SetTimestamp(e.Time)
	r.SetObservedTimestamp(time.Now())
	sev, text := otlpSeverity(e)
	r.SetSeverity(sev)
	r.SetSeverityText(text)
	s.msg = appendMessage(s.msg[:0], e)
	r.SetBody(attribute.StringValue(string(s.msg)))
	r.AddAttributes(otlpPodAttrs(kvs, e)...)
	s.logger.Emit(s.ctx, r)
}

// export sends records and counts them, with failed events that never
// became records.
func (s *OTLPSink) export(records []sdklog.Record, failed int) {
	lost := uint64(failed)
	var err error
	if len(records) > 0 {
		if s.ctx.Err() != nil {
			err = s.ctx.Err()
		} else {
			err = s.exporter.Export(s.ctx, records)
		}
		if rejected, ok := partialSuccess(err); ok {
			lost += min(uint64(rejected), uint64(len(records)))
		} else if err != nil {
			lost += uint64(len(records))
		}
	}
	n := uint64(len(records) + failed)
	// Not under s.mu: OnFailing logs, and Write must never wait on that.
	var counted bool
	if len(records) > 0 {
		// An export cancelled by Close is no news to the command.
		if err != nil {
			err = fmt.Errorf("exporting to the OTLP collector: %w", err)
		}
		counted = s.q.book.book(n-lost, lost, err, !errors.Is(err, context.Canceled))
	} else {
		// Events Close gave up on: the failing state stays.
		counted = s.q.book.add(0, lost)
	}
	if counted {
		s.q.finish(n)
	}
}

// partialSuccess reads how many records the collector rejected from the
// exporter's partial-success error (its type is internal to the
// exporter, so it is found by name). ok is false for any other error.
func partialSuccess(err error) (rejected int64, ok bool) {
	if err == nil {
		return 0, false
	}
	errs := []error{err}
	for len(errs) > 0 {
		e := errs[len(errs)-1]
		errs = errs[:len(errs)-1]
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			errs = append(errs, u.Unwrap()...)
			continue
		case interface{ Unwrap() error }:
			if w := u.Unwrap(); w != nil {
				errs = append(errs, w)
			}
			continue
		}
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Struct && v.Type().Name() == "PartialSuccess" {
			if f := v.FieldByName("RejectedItems"); f.IsValid() && f.Kind() == reflect.Int64 {
				rejected += f.Int()
				ok = true
				continue
			}
		}
		return 0, false // another error: the batch failed
	}
	return rejected, ok
}

// otlpSeverity maps the journal's and syslog's severity (message.go) to
// OpenTelemetry's, as the OpenTelemetry log data model maps syslog's.
func otlpSeverity(e *tracer.Event) (otellog.Severity, string) {
	switch severity(e) {
	case sevWarning:
		return otellog.SeverityWarn, "WARN"
	case sevNotice:
		return otellog.SeverityInfo2, "NOTICE"
	}
	return otellog.SeverityInfo, "INFO"
}

// collectProcessor keeps each record the logger emits for the converter
// goroutine, which calls the logger itself.
type collectProcessor struct {
	records []sdklog.Record
}

func (p *collectProcessor) OnEmit(_ context.Context, r *sdklog.Record) error {
	p.records = append(p.records, r.Clone())
	return nil
}

func (p *collectProcessor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (p *collectProcessor) Shutdown(context.Context) error                         { return nil }
func (p *collectProcessor) ForceFlush(context.Context) error                       { return nil }

var _ tracer.LossReporter = (*OTLPSink)(nil)
var _ tracer.Kicker = (*OTLPSink)(nil)

func init() {
	RegisterDestination(&Destination{
		Forms:          []string{"otlps://HOST:PORT", "otlp:/SOCKET"},
		CleartextForms: []string{"otlp://HOST:PORT"},
		Complete:       []string{"otlps://", "otlp:/", "otlp://"},
		// otlpx:// too: a mistyped scheme is refused, not taken for a file.
		Match: func(output string) bool {
			scheme, _, found := strings.Cut(output, "://")
			return found && strings.HasPrefix(scheme, "otlp") || strings.HasPrefix(output, "otlp:/")
		},
		Prepare: prepareOTLP,
	})
}

// prepareOTLP takes otlps://HOST:PORT, otlp:/SOCKET and otlp://HOST:PORT
// (an OpenTelemetry collector). Its records carry the ECS fields, so
// --format and --time, which shape lines, are refused.
func prepareOTLP(output string, c DestinationConfig) (*Output, error) {
	scheme, _, found := strings.Cut(output, "://")
	if err := refuseDestFlags(c, found && scheme == "otlps", found && scheme == "otlp"); err != nil {
		return nil, err
	}
	// An empty --format= (tracer.service's TRACER_FORMAT left empty) is the default.
	if c.FormatGiven && c.Format != "" && c.Format != "ecs" {
		return nil, vocab.Usagef("--output %s sends OpenTelemetry log records whose attributes are the ECS fields (docs/events.md), not --format lines: drop --format", output)
	}
	if c.TimeGiven {
		return nil, vocab.Usagef("--time is for text lines: an OTLP log record carries the event's time: drop --time")
	}
	so := OTLPOptions{Version: c.Version, CAFile: c.CAFile, AllowCleartext: c.AllowCleartext}
	// The URL is checked now, before any rule or probe is loaded.
	if err := CheckOTLP(output, so); err != nil {
		return nil, err
	}
	var o Output
	if OTLPCleartext(output) {
		o.Warning = "--allow-cleartext: events go to " + output + " unencrypted and unauthenticated; whoever holds the port gets every command line (use otlps:// or otlp:/SOCKET)"
	}
	o.Open = func(Rotation) (*OpenOutput, error) {
		return &OpenOutput{NewSink: func(opts OutputOptions) (tracer.Sink, error) {
			return NewOTLPSink(output, opts, so)
		}}, nil
	}
	return &o, nil
}
