// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
)

// A request as the Collector decoded it, resolved through its dictionary: what a test checks.
// An index out of its table's range is not resolved but named in Errors.
type summary struct {
	Samples    int               `json:"samples"` // Sample messages in the request
	Dictionary map[string]int    `json:"dictionary"`
	Links      []link            `json:"links"` // the link table, element 0 included
	Resources  []resourceSummary `json:"resources"`
	Errors     []string          `json:"errors"`
}

type link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

type resourceSummary struct {
	Attributes map[string]any `json:"attributes"`
	Scopes     []scopeSummary `json:"scopes"`
}

type scopeSummary struct {
	Name     string           `json:"name"`
	Version  string           `json:"version"`
	Profiles []profileSummary `json:"profiles"`
}

type valueType struct {
	Type string `json:"type"`
	Unit string `json:"unit"`
}

type profileSummary struct {
	SampleType   valueType       `json:"sample_type"`
	PeriodType   valueType       `json:"period_type"`
	Period       int64           `json:"period"`
	TimeUnixNano uint64          `json:"time_unix_nano"`
	DurationNano uint64          `json:"duration_nano"`
	ProfileID    string          `json:"profile_id"`
	Attributes   map[string]any  `json:"attributes"`
	Samples      []sampleSummary `json:"samples"`
}

type sampleSummary struct {
	Stack      []frame        `json:"stack"` // leaf first; an inlined function before its caller
	Attributes map[string]any `json:"attributes"`
	LinkIndex  int32          `json:"link_index"`
	Values     []int64        `json:"values"`
	Timestamps []uint64       `json:"timestamps"`
}

type frame struct {
	Function  string         `json:"function"`
	File      string         `json:"file"`
	Line      int64          `json:"line"`
	Inlined   bool           `json:"inlined"` // inlined into the next frame of the same location
	Address   uint64         `json:"address"`
	Mapping   string         `json:"mapping"`
	Attrs     map[string]any `json:"attributes"`    // the location's (profile.frame.type)
	MapAttrs  map[string]any `json:"mapping_attrs"` // the mapping's (build ids)
	NoSymbols bool           `json:"no_symbols"`    // a location without lines
}

type resolver struct {
	dict pprofile.ProfilesDictionary
	errs *[]string
}

func (r resolver) str(i int32) string {
	t := r.dict.StringTable()
	if i < 0 || int(i) >= t.Len() {
		*r.errs = append(*r.errs, fmt.Sprintf("string index %d out of %d", i, t.Len()))
		return ""
	}
	return t.At(int(i))
}

func (r resolver) attrs(indices pcommon.Int32Slice) map[string]any {
	out := map[string]any{}
	t := r.dict.AttributeTable()
	for _, i := range indices.AsRaw() {
		if i <= 0 || int(i) >= t.Len() {
			*r.errs = append(*r.errs, fmt.Sprintf("attribute index %d out of %d", i, t.Len()))
			continue
		}
		kv := t.At(int(i))
		out[r.str(kv.KeyStrindex())] = kv.Value().AsRaw()
	}
	return out
}

func (r resolver) valueType(v pprofile.ValueType) valueType {
	return valueType{Type: r.str(v.TypeStrindex()), Unit: r.str(v.UnitStrindex())}
}

func (r resolver) location(i int32) []frame {
	locs := r.dict.LocationTable()
	if i <= 0 || int(i) >= locs.Len() {
		*r.errs = append(*r.errs, fmt.Sprintf("location index %d out of %d", i, locs.Len()))
		return nil
	}
	loc := locs.At(int(i))
	base := frame{Address: loc.Address(), Attrs: r.attrs(loc.AttributeIndices())}
	if mi := loc.MappingIndex(); mi != 0 {
		if maps := r.dict.MappingTable(); mi > 0 && int(mi) < maps.Len() {
			m := maps.At(int(mi))
			base.Mapping = r.str(m.FilenameStrindex())
			base.MapAttrs = r.attrs(m.AttributeIndices())
		} else {
			*r.errs = append(*r.errs, fmt.Sprintf("mapping index %d out of %d", mi, maps.Len()))
		}
	}
	lines := loc.Lines()
	if lines.Len() == 0 {
		base.NoSymbols = true
		return []frame{base}
	}
	frames := make([]frame, 0, lines.Len())
	funcs := r.dict.FunctionTable()
	for j := 0; j < lines.Len(); j++ {
		f := base
		ln := lines.At(j)
		f.Line = ln.Line()
		f.Inlined = j < lines.Len()-1
		if fi := ln.FunctionIndex(); fi > 0 && int(fi) < funcs.Len() {
			fn := funcs.At(int(fi))
			f.Function = r.str(fn.NameStrindex())
			f.File = r.str(fn.FilenameStrindex())
		} else {
			*r.errs = append(*r.errs, fmt.Sprintf("function index %d out of %d", fi, funcs.Len()))
		}
		frames = append(frames, f)
	}
	return frames
}

func (r resolver) stack(i int32) []frame {
	stacks := r.dict.StackTable()
	if i < 0 || int(i) >= stacks.Len() {
		*r.errs = append(*r.errs, fmt.Sprintf("stack index %d out of %d", i, stacks.Len()))
		return nil
	}
	frames := []frame{}
	for _, li := range stacks.At(int(i)).LocationIndices().AsRaw() {
		frames = append(frames, r.location(li)...)
	}
	return frames
}

func (r resolver) profile(p pprofile.Profile) profileSummary {
	ps := profileSummary{
		SampleType:   r.valueType(p.SampleType()),
		PeriodType:   r.valueType(p.PeriodType()),
		Period:       p.Period(),
		TimeUnixNano: uint64(p.Time()),
		DurationNano: p.DurationNano(),
		ProfileID:    p.ProfileID().String(),
		Attributes:   r.attrs(p.AttributeIndices()),
		Samples:      []sampleSummary{},
	}
	links := r.dict.LinkTable().Len()
	for k := 0; k < p.Samples().Len(); k++ {
		s := p.Samples().At(k)
		if li := s.LinkIndex(); li < 0 || int(li) >= links {
			*r.errs = append(*r.errs, fmt.Sprintf("link index %d out of %d", li, links))
		}
		ps.Samples = append(ps.Samples, sampleSummary{
			Stack:      r.stack(s.StackIndex()),
			Attributes: r.attrs(s.AttributeIndices()),
			LinkIndex:  s.LinkIndex(),
			Values:     append([]int64{}, s.Values().AsRaw()...),
			Timestamps: append([]uint64{}, s.TimestampsUnixNano().AsRaw()...),
		})
	}
	return ps
}

func summarize(pd pprofile.Profiles) summary {
	s := summary{Samples: pd.SampleCount(), Links: []link{}, Resources: []resourceSummary{}, Errors: []string{}}
	dict := pd.Dictionary()
	r := resolver{dict: dict, errs: &s.Errors}
	s.Dictionary = map[string]int{
		"strings": dict.StringTable().Len(), "functions": dict.FunctionTable().Len(),
		"locations": dict.LocationTable().Len(), "mappings": dict.MappingTable().Len(),
		"stacks": dict.StackTable().Len(), "attributes": dict.AttributeTable().Len(),
		"links": dict.LinkTable().Len(),
	}
	for i := 0; i < dict.LinkTable().Len(); i++ {
		l := dict.LinkTable().At(i)
		tid, sid := l.TraceID(), l.SpanID()
		s.Links = append(s.Links, link{TraceID: hex.EncodeToString(tid[:]), SpanID: hex.EncodeToString(sid[:])})
	}
	for i := 0; i < pd.ResourceProfiles().Len(); i++ {
		rp := pd.ResourceProfiles().At(i)
		rs := resourceSummary{Attributes: rp.Resource().Attributes().AsRaw(), Scopes: []scopeSummary{}}
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			sp := rp.ScopeProfiles().At(j)
			ss := scopeSummary{Name: sp.Scope().Name(), Version: sp.Scope().Version(), Profiles: []profileSummary{}}
			for k := 0; k < sp.Profiles().Len(); k++ {
				ss.Profiles = append(ss.Profiles, r.profile(sp.Profiles().At(k)))
			}
			rs.Scopes = append(rs.Scopes, ss)
		}
		s.Resources = append(s.Resources, rs)
	}
	return s
}

// summarizeFile decodes a file holding one ExportProfilesServiceRequest (otelprofd -o x.otlp)
// with the Collector's own decoder and writes its summary.
func summarizeFile(path string, out io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	req := pprofileotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	line, err := jsonLine(summarize(req.Profiles()))
	if err != nil {
		return err
	}
	_, err = out.Write(line)
	return err
}
