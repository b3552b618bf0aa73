// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// selfSignedFiles writes a certificate for 127.0.0.1, its own CA, and
// its key, and returns their files.
func selfSignedFiles(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "otlptest collector"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestWatchExportsOverTLS: --output otlps:// with --output-ca-file, the
// collector's own CA, delivers every event to the collector's receiver
// speaking TLS; nothing is lost.
func TestWatchExportsOverTLS(t *testing.T) {
	needRoot(t)
	cert, key := selfSignedFiles(t)
	sink := new(consumertest.LogsSink)
	addr := freeAddr(t)
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	hc := cfg.Protocols.HTTP.GetOrInsertDefault()
	hc.ServerConfig.NetAddr.Endpoint = addr
	hc.ServerConfig.TLS = configoptional.Some(configtls.ServerConfig{Config: configtls.Config{CertFile: cert, KeyFile: key}})
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Shutdown(context.Background()) })

	m := marker(t)
	w := startWatch(t, "--exe", m, "--output", "otlps://"+addr, "--output-ca-file", cert)
	runMarker(t, m)
	for deadline := time.Now().Add(15 * time.Second); sink.LogRecordCount() < execs && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	_ = w.cmd.Process.Signal(os.Interrupt)
	seen, lost, _ := w.wait(t, 15*time.Second)
	if seen != execs || lost != 0 || sink.LogRecordCount() != execs {
		t.Errorf("otlps:// with the collector's CA: %d seen, %d lost, %d records; want %d each, none lost: %q",
			seen, lost, sink.LogRecordCount(), execs, w.said)
	}
}
