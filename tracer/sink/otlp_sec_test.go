// SPDX-License-Identifier: Apache-2.0

package sink

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// caFile writes c's certificate, its own CA, as PEM and returns the file.
func caFile(t *testing.T, c *collector) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Cleartext otlp:// is refused unless allowed, and headers over it always;
// TLS and a Unix socket pass, headers too; --output-ca-file is for otlps://
// and must hold a certificate.
func TestOTLPCleartextPolicy(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "")
	t.Setenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "")
	c := startCollector(t, true)
	ca := caFile(t, c)
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(target string, o OTLPOptions, wantOK bool, why string) {
		t.Helper()
		err := CheckOTLP(target, o)
		if wantOK && err != nil {
			t.Errorf("%s %+v: %v, want it to pass", target, o, err)
		}
		if !wantOK && (!errors.Is(err, vocab.ErrUsage) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), why)) {
			t.Errorf("%s %+v: %v, want a one-line usage error about %q", target, o, err, why)
		}
	}
	check("otlp://127.0.0.1:4318", OTLPOptions{}, false, "--allow-cleartext")
	check("otlp://collector.example:4318", OTLPOptions{}, false, "otlps://collector.example:4318")
	check("otlp://127.0.0.1:4318", OTLPOptions{AllowCleartext: true}, true, "")
	check("otlps://127.0.0.1:4318", OTLPOptions{}, true, "")
	check("otlp:/run/otelcol/otlp.sock", OTLPOptions{}, true, "")
	check("otlps://127.0.0.1:4318", OTLPOptions{CAFile: ca}, true, "")
	check("otlp://127.0.0.1:4318", OTLPOptions{AllowCleartext: true, CAFile: ca}, false, "--output-ca-file is for otlps://")
	check("otlps://127.0.0.1:4318", OTLPOptions{CAFile: notPEM}, false, "no PEM certificate")
	check("otlps://127.0.0.1:4318", OTLPOptions{CAFile: filepath.Join(t.TempDir(), "none.pem")}, false, "--output-ca-file")
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"} {
		t.Setenv(v, "Authorization=Bearer s3cret")
		check("otlp://127.0.0.1:4318", OTLPOptions{AllowCleartext: true}, false, v+" over cleartext")
		check("otlps://127.0.0.1:4318", OTLPOptions{}, true, "")
		check("otlp:/run/otelcol/otlp.sock", OTLPOptions{}, true, "")
		t.Setenv(v, "")
	}
}

// otlps:// with --output-ca-file delivers to a collector whose certificate
// that CA signed, and only to it: the file wins over
// OTEL_EXPORTER_OTLP_CERTIFICATE.
func TestOTLPCAFile(t *testing.T) {
	c := startCollector(t, true)
	s, err := NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{CAFile: caFile(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 3)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{}) || len(c.got()) != 3 {
		t.Errorf("--output-ca-file of the collector's CA: loss %+v, %d records; want 3, none lost", l, len(c.got()))
	}
	// Another CA pinned; the SDK's variable names the collector's.
	otherCA := otherCAFile(t)
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", caFile(t, c))
	if s, err = NewOTLPSink(c.target(), OutputOptions{}, OTLPOptions{CAFile: otherCA}); err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 2)
	s.Close()
	if l := s.Loss(); l.Output != 2 || len(c.got()) != 3 {
		t.Errorf("a collector the pinned CA did not sign: loss %+v, %d records; want both refused", l, len(c.got())-3)
	}
}

// otlp:/SOCKET delivers over a Unix socket.
func TestOTLPUnixSocket(t *testing.T) {
	c := newCollector(t)
	sock := filepath.Join(t.TempDir(), "otlp.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = http.Serve(ln, c.srv.Config.Handler) }()
	t.Cleanup(func() { ln.Close() })
	if err := CheckOTLP("otlp:"+sock, OTLPOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := NewOTLPSink("otlp:"+sock, OutputOptions{}, OTLPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeN(t, s, 3)
	s.Close()
	if l := s.Loss(); l != (tracer.OutputLoss{}) || len(c.got()) != 3 {
		t.Errorf("otlp:%s: loss %+v, %d records; want 3, none lost", sock, l, len(c.got()))
	}
}

// otherCAFile writes a CA certificate that signed nothing the tests
// serve.
func otherCAFile(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "other.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// syslog+tls:// (RFC 5425): the frames arrive in TLS, across batches
// (the server's session tickets are no sign of a closed connection), and
// only to a server the pinned CA signed.
func TestSyslogTLS(t *testing.T) {
	hs := httptest.NewTLSServer(http.NotFoundHandler())
	defer hs.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: hs.TLS.Certificates})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var msgs []string
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					n, err := r.ReadString(' ')
					if err != nil {
						return
					}
					size, _ := strconv.Atoi(strings.TrimSuffix(n, " "))
					b := make([]byte, size)
					if _, err := io.ReadFull(r, b); err != nil {
						return
					}
					mu.Lock()
					msgs = append(msgs, string(b))
					mu.Unlock()
				}
			}()
		}
	}()
	got := func() int { mu.Lock(); defer mu.Unlock(); return len(msgs) }
	cfg, ok, err := ParseSyslog("syslog+tls://" + ln.Addr().String())
	if !ok || err != nil || !cfg.TLS || cfg.Cleartext() {
		t.Fatalf("ParseSyslog(syslog+tls://...): %+v %v %v", cfg, ok, err)
	}
	cfg.CAFile = caFileOf(t, hs.Certificate().Raw)
	s, err := NewSyslog(cfg, "json", OutputOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := testEvents()
	for batch := 0; batch < 2; batch++ {
		for i := range ev {
			_ = s.Write(&ev[i])
		}
		_ = s.Flush()
		time.Sleep(100 * time.Millisecond)
	}
	_ = s.Close()
	for deadline := time.Now().Add(5 * time.Second); got() < 2*len(ev) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := got(); n != 2*len(ev) || s.Loss() != (tracer.OutputLoss{}) {
		t.Errorf("syslog+tls: %d messages, loss %+v; want %d, none lost", n, s.Loss(), 2*len(ev))
	}
	mu.Lock()
	if len(msgs) > 0 && !rfc5424.MatchString(msgs[0]) {
		t.Errorf("not an RFC 5424 message: %q", msgs[0])
	}
	mu.Unlock()
	// Pinned to another CA: nothing goes, all counted.
	cfg.CAFile = otherCAFile(t)
	if s, err = NewSyslog(cfg, "json", OutputOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range ev {
		_ = s.Write(&ev[i])
	}
	_ = s.Close()
	time.Sleep(100 * time.Millisecond)
	if n := got(); n != 2*len(ev) || s.Loss().Output != uint64(len(ev)) {
		t.Errorf("a server the pinned CA did not sign: %d more messages, loss %+v; want none, %d lost", n-2*len(ev), s.Loss(), len(ev))
	}
}

// caFileOf writes der as a PEM certificate file.
func caFileOf(t *testing.T, der []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
