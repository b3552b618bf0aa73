package sink

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
// TLS and a Unix socket pass, headers too; --otlp-ca-file is for otlps://
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
	check("otlp://127.0.0.1:4318", OTLPOptions{AllowCleartext: true, CAFile: ca}, false, "--otlp-ca-file is for otlps://")
	check("otlps://127.0.0.1:4318", OTLPOptions{CAFile: notPEM}, false, "no PEM certificate")
	check("otlps://127.0.0.1:4318", OTLPOptions{CAFile: filepath.Join(t.TempDir(), "none.pem")}, false, "--otlp-ca-file")
	for _, v := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"} {
		t.Setenv(v, "Authorization=Bearer s3cret")
		check("otlp://127.0.0.1:4318", OTLPOptions{AllowCleartext: true}, false, v+" over cleartext")
		check("otlps://127.0.0.1:4318", OTLPOptions{}, true, "")
		check("otlp:/run/otelcol/otlp.sock", OTLPOptions{}, true, "")
		t.Setenv(v, "")
	}
}

// otlps:// with --otlp-ca-file delivers to a collector whose certificate
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
		t.Errorf("--otlp-ca-file of the collector's CA: loss %+v, %d records; want 3, none lost", l, len(c.got()))
	}
	// Another CA pinned; the SDK's variable names the collector's.
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
	otherCA := filepath.Join(t.TempDir(), "other.pem")
	if err := os.WriteFile(otherCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
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
