// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tracer-dev/tracer/tracer"
	"github.com/tracer-dev/tracer/tracer/vocab"
)

// idleBackend is a tracer.Backend that delivers nothing.
type idleBackend struct{}

func (idleBackend) Name() string              { return "ebpf" }
func (idleBackend) Start(tracer.Config) error { return nil }
func (idleBackend) Run(ctx context.Context, _ func(*tracer.Event)) error {
	<-ctx.Done()
	return ctx.Err()
}
func (idleBackend) Stats() tracer.Stats { return tracer.Stats{} }
func (idleBackend) Close() error        { return nil }

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns a pool that trusts it.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "tracer-test"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePEM("cert.pem", "CERTIFICATE", der)
	writePEM("key.pem", "EC PRIVATE KEY", kb)
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// With --web.config.file, the metrics answer only over TLS and only to
// the configured user: plain HTTP is refused, HTTPS without or with wrong
// credentials gets 401, with them the metrics.
func TestMetricsWebConfig(t *testing.T) {
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web-config.yml")
	// Relative paths are relative to the file's directory.
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"+
		"basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := tracer.NewPipeline(tracer.DefaultConfig())
	ready, err := startMetrics(ctx, addr, p, idleBackend{}, metricsOptions{webConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ready()

	// Plain HTTP: the TLS server answers 400 and never the metrics.
	plain := &http.Client{Timeout: 5 * time.Second}
	if code, body, err := get(plain, "http://"+addr+"/metrics", ""); err == nil && (code != http.StatusBadRequest || strings.Contains(body, "tracer_")) {
		t.Errorf("plain HTTP: %d %q, want it refused", code, head(body))
	}

	tlsClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, c := range []struct {
		user, pass string
		want       int
	}{
		{"", "", http.StatusUnauthorized},
		{"prometheus", "wrong", http.StatusUnauthorized},
		{"someone", "s3cret", http.StatusUnauthorized},
		{"prometheus", "s3cret", http.StatusOK},
	} {
		code, body, err := get(tlsClient, "https://"+addr+"/metrics", c.user+":"+c.pass)
		if err != nil {
			t.Fatalf("HTTPS as %q: %v", c.user, err)
		}
		if code != c.want {
			t.Errorf("HTTPS as %q/%q: %d, want %d", c.user, c.pass, code, c.want)
		}
		if has := strings.Contains(body, "tracer_build_info"); has != (c.want == http.StatusOK) {
			t.Errorf("HTTPS as %q/%q: metrics in the answer: %v", c.user, c.pass, has)
		}
	}
	// /healthz is behind the same door.
	if code, _, _ := get(tlsClient, "https://"+addr+"/healthz", ":"); code != http.StatusUnauthorized {
		t.Errorf("/healthz without credentials: %d, want 401", code)
	}
}

// A web config that cannot work is bad input before anything starts.
func TestMetricsWebConfigBad(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n  no_such_field: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := tracer.NewPipeline(tracer.DefaultConfig())
	for _, c := range []struct{ addr, file, want string }{
		{freeLoopback(t), bad, "bad --web.config.file"},
		{freeLoopback(t), filepath.Join(dir, "missing.yml"), "bad --web.config.file"},
		{"", bad, "needs --metrics-addr"},
	} {
		_, err := startMetrics(context.Background(), c.addr, p, idleBackend{}, metricsOptions{webConfig: c.file})
		if !errors.Is(err, vocab.ErrUsage) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("startMetrics(%q, %s) = %v, want one line with %q", c.addr, filepath.Base(c.file), err, c.want)
		}
	}
	// The CLI: exit 2, one line, before root is even checked.
	code, _, stderr := runTracer(t, nil, "watch", "--backend", "ebpf", "--metrics-addr", freeLoopback(t), "--web.config.file", bad)
	if os.Geteuid() == 0 && (code != 2 || !strings.Contains(stderr, "bad --web.config.file") || strings.Count(strings.TrimSpace(stderr), "\n") != 0) {
		t.Errorf("watch with a bad web config: exit %d, %q", code, stderr)
	}
}

func get(c *http.Client, url, userPass string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if u, p, ok := strings.Cut(userPass, ":"); ok && u != "" {
		req.SetBasicAuth(u, p)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// --metrics-addr unix:PATH: a socket made 0660 from the start, serving
// /metrics and /healthz; an old socket is replaced, anything else is not,
// a directory reached through another user's symbolic link is refused,
// and the socket is gone once the server stops.
func TestMetricsUnixSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a symbolic link of another user")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "metrics.sock")
	old, err := net.Listen("unix", sock) // what a killed tracer left
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := tracer.NewPipeline(tracer.DefaultConfig())
	ready, err := startMetrics(ctx, "unix:"+sock, p, idleBackend{})
	if err != nil {
		t.Fatal(err)
	}
	ready()
	st, err := os.Lstat(sock)
	if err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o660 {
		t.Fatalf("socket %v, %v: want a socket 0660", st.Mode(), err)
	}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := c.Get("http://tracer" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || path == "/metrics" && !strings.Contains(string(body), "tracer_events_total") {
			t.Errorf("GET %s: %d %.80s", path, resp.StatusCode, body)
		}
	}
	cancel()
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(sock); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("socket left after the server stopped")
		}
	}
	// Not a socket: left alone. Another user's link: not followed.
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"unix:" + file, "unix:" + link + "/m.sock"} {
		if _, err := startMetrics(context.Background(), addr, p, idleBackend{}); !errors.Is(err, vocab.ErrUsage) {
			t.Errorf("startMetrics(%s) = %v, want a usage error", addr, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(target, "m.sock")); err == nil {
		t.Error("a socket made through another user's link")
	}
	if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the file in the socket's place: %v, %v", st, err)
	}
}
