package main

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseConfigDefaults(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		envGOGC  string
		envProcs string
		want     config
	}{
		{
			name: "none",
			want: config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "100", gogcs: []string{"100"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
		{
			name:    "GOGC from the environment",
			envGOGC: "400",
			want:    config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "400", gogcs: []string{"400"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
		{
			name:    "flag beats environment",
			args:    []string{"-gogc", "off"},
			envGOGC: "400",
			want:    config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "off", gogcs: []string{"off"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
		{
			name: "everything",
			args: []string{"-mode", "idle, off", "-len", "5", "-readers", "1", "-chunk", "7", "-gogc", "OFF", "-runs", "3", "-json", "-busy", "100, 0,50"},
			want: config{modes: []mode{modeIdle, modeOff}, length: 5, readers: 1, chunk: 7, gogc: "off", gogcs: []string{"off"}, runs: 3, json: true, busy: []int{100, 0, 50}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
		{
			name: "several GOGC",
			args: []string{"-gogc", "100, OFF,400"},
			want: config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "100", gogcs: []string{"100", "off", "400"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
		{
			name: "GOGC normalised",
			args: []string{"-gogc", "0400"},
			want: config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "400", gogcs: []string{"400"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
		{
			name:     "GOMAXPROCS from the environment",
			envProcs: "1",
			want:     config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "100", gogcs: []string{"100"}, runs: 1, busy: []int{0}, procs: []int{1}, frontier: defaultFrontier, probe: true},
		},
		{
			name:     "procs, frontier and probe",
			args:     []string{"-procs", "1, 4", "-frontier", "50,0025", "-probe=false"},
			envProcs: "3",
			want:     config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "100", gogcs: []string{"100"}, runs: 1, busy: []int{0}, procs: []int{1, 4}, frontier: []string{"50", "25"}},
		},
		{
			name: "no frontier",
			args: []string{"-frontier", "none"},
			want: config{modes: allModes, length: defaultLen, readers: defaultReaders, chunk: defaultChunk, gogc: "100", gogcs: []string{"100"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: nil, probe: true},
		},
		{
			name: "readers up to the limit",
			args: []string{"-readers", "84"},
			want: config{modes: allModes, length: defaultLen, readers: 84, chunk: defaultChunk, gogc: "100", gogcs: []string{"100"}, runs: 1, busy: []int{0}, procs: []int{2, 1}, frontier: defaultFrontier, probe: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, environ{gogc: tt.envGOGC, procs: tt.envProcs, numCPU: 2, fdLimit: 100}, nil)
			if err != nil {
				t.Fatalf("got error %v, want %+v", err, tt.want)
			}
			if !slices.Equal(got.modes, tt.want.modes) {
				t.Errorf("got modes %v, want %v", got.modes, tt.want.modes)
			}
			got.modes, tt.want.modes = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		envGOGC  string
		envProcs string
		want     string // a substring of the error
	}{
		{"zero length", []string{"-len", "0"}, "", "", "-len 0"},
		{"negative length", []string{"-len", "-1"}, "", "", "-len -1"},
		{"zero readers", []string{"-readers", "0"}, "", "", "-readers 0"},
		{"too many readers", []string{"-readers", "85"}, "", "", "open-file limit is 100"},
		{"zero chunk", []string{"-chunk", "0"}, "", "", "-chunk 0"},
		{"huge chunk", []string{"-chunk", "2147483648"}, "", "", "-chunk 2147483648"},
		{"zero runs", []string{"-runs", "0"}, "", "", "-runs 0"},
		{"unknown mode", []string{"-mode", "fast"}, "", "", `unknown mode "fast"`},
		{"empty mode", []string{"-mode", ""}, "", "", `unknown mode ""`},
		{"mode twice", []string{"-mode", "off,off"}, "", "", "off given twice"},
		{"bad gogc", []string{"-gogc", "fast"}, "", "", `-gogc "fast"`},
		{"negative gogc", []string{"-gogc", "-5"}, "", "", `-gogc "-5"`},
		{"bad gogc in a list", []string{"-gogc", "100,x"}, "", "", `-gogc "x"`},
		{"gogc twice", []string{"-gogc", "100,off,0100"}, "", "", "100 given twice"},
		{"bad GOGC in the environment", nil, "lots", "", "from $GOGC"},
		{"not a number", []string{"-len", "lots"}, "", "", "invalid value"},
		{"unknown flag", []string{"-fast"}, "", "", "-fast"},
		{"argument", []string{"extra"}, "", "", `unexpected argument "extra"`},
		{"busy not a number", []string{"-busy", "half"}, "", "", `-busy "half"`},
		{"budget above one", []string{"-budget", "3"}, "", "", "-budget 3"},
		{"negative budget", []string{"-budget", "-0.1"}, "", "", "-budget -0.1"},
		{"budget not a number", []string{"-budget", "NaN"}, "", "", "-budget NaN"},
		{"busy above one CPU", []string{"-busy", "0,150"}, "", "", "0 to 100"},
		{"busy negative", []string{"-busy", "-10"}, "", "", "0 to 100"},
		{"busy empty", []string{"-busy", ""}, "", "", `-busy ""`},
		{"busy twice", []string{"-busy", "50,0,50"}, "", "", "50 given twice"},
		{"procs zero", []string{"-procs", "0"}, "", "", `-procs "0"`},
		{"procs twice", []string{"-procs", "2,1,2"}, "", "", "2 given twice"},
		{"bad GOMAXPROCS in the environment", nil, "", "many", "from $GOMAXPROCS"},
		{"frontier off", []string{"-frontier", "100,off"}, "", "", `-frontier "100,off"`},
		{"frontier twice", []string{"-frontier", "50,50"}, "", "", "50 given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig(tt.args, environ{gogc: tt.envGOGC, procs: tt.envProcs, numCPU: 2, fdLimit: 100}, nil)
			if err == nil {
				t.Fatalf("got %+v, want an error containing %q", got, tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Fatalf("got error %q, want one line containing %q", msg, tt.want)
			}
		})
	}
}

func TestParseConfigHelp(t *testing.T) {
	var usage bytes.Buffer
	_, err := parseConfig([]string{"-h"}, environ{numCPU: 2, fdLimit: 100}, &usage)
	if !errors.Is(err, errHelp) {
		t.Fatalf("got error %v, want errHelp", err)
	}
	for _, flag := range []string{"-mode", "-len", "-readers", "-chunk", "-gogc", "-runs", "-json", "-busy", "-procs", "-frontier", "-probe", "-budget"} {
		if !strings.Contains(usage.String(), flag) {
			t.Errorf("usage does not mention %s:\n%s", flag, usage.String())
		}
	}
}
