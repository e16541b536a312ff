// SPDX-License-Identifier: Apache-2.0

// Command otelcol-otelprofd is the OpenTelemetry Collector the test suite sends profiles to:
// the upstream Collector (otelcol.NewCommand) with the few components the tests and the shipped
// configurations use, and one of our own, the profilesjson exporter (exporter.go), which writes
// what the Collector decoded as a JSON summary that a test can read.
//
//	otelcol-otelprofd --config=FILE --feature-gates=+service.profilesSupport
//	otelcol-otelprofd validate --config=FILE
//	otelcol-otelprofd summarize FILE.otlp   # decode one ExportProfilesServiceRequest with pdata
package main

import (
	"fmt"
	"os"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func factories() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](
		batchprocessor.NewFactory(), memorylimiterprocessor.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		debugexporter.NewFactory(), newProfilesJSONFactory()); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "summarize" {
		if err := summarizeFile(os.Args[2], os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "otelcol-otelprofd: %v\n", err)
			os.Exit(1)
		}
		return
	}
	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-otelprofd",
			Description: "OpenTelemetry Collector for otelprofd's tests",
			Version:     "0.165.0",
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory(),
				},
				DefaultScheme: "env",
			},
		},
	}
	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		os.Exit(1)
	}
}
