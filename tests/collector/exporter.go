// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// profilesJSONConfig: the profilesjson exporter appends one JSON line per request it is given
// (summary.go says what a line holds) to Path.
type profilesJSONConfig struct {
	Path string `mapstructure:"path"`
}

func (c *profilesJSONConfig) Validate() error {
	if c.Path == "" {
		return errors.New("path must be set")
	}
	return nil
}

type profilesJSONExporter struct {
	path string
	mu   sync.Mutex // one writer at a time: each request is one whole line
	file *os.File
}

func newProfilesJSONFactory() xexporter.Factory {
	return xexporter.NewFactory(component.MustNewType("profilesjson"),
		func() component.Config { return &profilesJSONConfig{} },
		xexporter.WithProfiles(func(_ context.Context, _ exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
			return &profilesJSONExporter{path: cfg.(*profilesJSONConfig).Path}, nil
		}, component.StabilityLevelDevelopment))
}

func (e *profilesJSONExporter) Start(context.Context, component.Host) error {
	f, err := os.OpenFile(e.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	e.file = f
	return err
}

func (e *profilesJSONExporter) Shutdown(context.Context) error {
	if e.file == nil {
		return nil
	}
	return e.file.Close()
}

func (e *profilesJSONExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (e *profilesJSONExporter) ConsumeProfiles(_ context.Context, pd pprofile.Profiles) error {
	line, err := jsonLine(summarize(pd))
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.file.Write(line)
	return err
}

func jsonLine(v any) ([]byte, error) {
	line, err := json.Marshal(v)
	return append(line, '\n'), err
}
