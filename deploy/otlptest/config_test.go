// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
)

// TestFleetCollectorConfig: the collector configuration docs/fleet.md
// gives for pipeline 3 loads and validates with the collector's own
// factories, and has a logs pipeline from the otlp receiver's HTTP
// protocol on port 4318, where --output otlp:// sends.
func TestFleetCollectorConfig(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(doc), "```yaml\n# otelcol.yaml\n")
	if !found {
		t.Fatal("docs/fleet.md has no ```yaml block starting with # otelcol.yaml")
	}
	block, _, _ := strings.Cut(rest, "```")
	path := filepath.Join(t.TempDir(), "otelcol.yaml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	factories, err := otelcoltest.NopFactories()
	if err != nil {
		t.Fatal(err)
	}
	if factories.Receivers, err = otelcol.MakeFactoryMap(otlpreceiver.NewFactory()); err != nil {
		t.Fatal(err)
	}
	if factories.Processors, err = otelcol.MakeFactoryMap(batchprocessor.NewFactory()); err != nil {
		t.Fatal(err)
	}
	if factories.Exporters, err = otelcol.MakeFactoryMap(debugexporter.NewFactory(), otlphttpexporter.NewFactory()); err != nil {
		t.Fatal(err)
	}
	cfg, err := otelcoltest.LoadConfigAndValidate(path, factories)
	if err != nil {
		t.Fatalf("the documented collector configuration: %v\n%s", err, block)
	}
	var logs bool
	for id, p := range cfg.Service.Pipelines {
		if id.Signal().String() == "logs" {
			logs = true
			if len(p.Receivers) != 1 || p.Receivers[0] != component.MustNewID("otlp") {
				t.Errorf("logs pipeline receivers %v, want otlp", p.Receivers)
			}
		}
	}
	if !logs {
		t.Error("no logs pipeline")
	}
	rc := cfg.Receivers[component.MustNewID("otlp")].(*otlpreceiver.Config)
	if h := rc.Protocols.HTTP.Get(); h == nil || !strings.HasSuffix(h.ServerConfig.NetAddr.Endpoint, ":4318") {
		t.Errorf("the otlp receiver does not serve HTTP on port 4318: %+v", rc.Protocols.HTTP)
	}
}
