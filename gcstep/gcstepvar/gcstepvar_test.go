package gcstepvar_test

import (
	"encoding/json"
	"expvar"
	"log"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gcstep/gcstepvar"
)

// A program publishes the Runtime's Var once, in main, and serves it with
// the other expvars at /debug/vars.
func ExampleNew() {
	rt := gcstep.NewRuntime()
	defer rt.Close()
	expvar.Publish("gcstep", gcstepvar.New(rt))

	// Importing expvar registered /debug/vars on http.DefaultServeMux; a
	// program with a mux of its own mounts expvar.Handler() there.
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", nil))
}

// varKey is the key under which Var renders the Stats field f.
func varKey(f reflect.StructField) string {
	var b strings.Builder
	r := []rune(f.Name)
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) &&
			(unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	if f.Type == reflect.TypeFor[time.Duration]() {
		b.WriteString("_seconds")
	}
	return b.String()
}

// decodeVar renders v and decodes the JSON object it is.
func decodeVar(t *testing.T, v expvar.Var) map[string]json.Number {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(v.String()))
	dec.UseNumber()
	var m map[string]json.Number
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", v.String(), err)
	}
	return m
}

// Every field of Stats is rendered, under its key and in its unit, and
// nothing else: the test that fails when Stats gains a field Var lacks.
func TestVarRendersEveryField(t *testing.T) {
	rt := gcstep.NewRuntime()
	defer rt.Close()
	got := decodeVar(t, gcstepvar.New(rt))

	typ := reflect.TypeFor[gcstep.Stats]()
	want := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		key := varKey(f)
		want[key] = true
		n, ok := got[key]
		if !ok {
			t.Errorf("Stats.%s: no key %q in %v", f.Name, key, got)
			continue
		}
		switch f.Type.Kind() {
		case reflect.Uint64:
			if _, err := n.Int64(); err != nil {
				t.Errorf("%s: got %s, want an integer", key, n)
			}
		case reflect.Int64: // a time.Duration
			if _, err := n.Float64(); err != nil {
				t.Errorf("%s: got %s, want a number", key, n)
			}
		default:
			t.Errorf("Stats.%s is a %v: teach Var and this test its unit", f.Name, f.Type)
		}
	}
	for key := range got {
		if !want[key] {
			t.Errorf("key %q is no field of Stats", key)
		}
	}
	if len(got) != typ.NumField() {
		t.Errorf("keys: got %d, want %d, one a field of Stats", len(got), typ.NumField())
	}
}

var garbage [][]byte

// Each value lies between those of Stats read just before and just after
// (they are equal but for the budget earned meanwhile, and for cycles the
// pacer runs): a field rendered under another's key shows here.
func TestVarValues(t *testing.T) {
	rt := gcstep.NewRuntime()
	defer rt.Close()
	for range 3 {
		for range 64 {
			garbage = append(garbage, make([]byte, 32<<10))
		}
		garbage = nil
		for rt.Step(time.Millisecond) {
		}
	}

	before := rt.Stats()
	v := gcstepvar.New(rt)
	got := decodeVar(t, v)
	after := rt.Stats()
	if before.Steps < 3 {
		t.Fatalf("Steps: got %d, want 3 or more", before.Steps)
	}

	b, a := reflect.ValueOf(before), reflect.ValueOf(after)
	for i := range b.NumField() {
		f := b.Type().Field(i)
		key := varKey(f)
		n, ok := got[key]
		if !ok {
			continue // TestVarRendersEveryField says so
		}
		var x, lo, hi float64
		if f.Type == reflect.TypeFor[time.Duration]() {
			x, _ = n.Float64()
			lo = time.Duration(b.Field(i).Int()).Seconds()
			hi = time.Duration(a.Field(i).Int()).Seconds()
		} else {
			u, err := n.Int64()
			if err != nil {
				continue
			}
			x, lo, hi = float64(u), float64(b.Field(i).Uint()), float64(a.Field(i).Uint())
		}
		lo, hi = min(lo, hi), max(lo, hi)
		if x < lo || x > hi {
			t.Errorf("%s: got %v, want from %v to %v (Stats.%s)", key, n, lo, hi, f.Name)
		}
	}

	// The same Var reads the Stats again at each render.
	rt.Step(time.Millisecond)
	if s := decodeVar(t, v)["steps"]; s.String() == got["steps"].String() {
		t.Errorf("steps after a Step: got %s again, want more", s)
	}
}
