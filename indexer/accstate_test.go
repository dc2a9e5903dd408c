package indexer

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

// accStateKinds are the accumulators that render their own state.
func accStateKinds() []stateAppender {
	return []stateAppender{&claudeAcc{}, &codexAcc{}, &geminiAcc{}, &llxprtAcc{}, &waveAcc{}}
}

var accStateStrings = []string{"", "", "a", "/home/u/proj", "2026-11-23T18:00:00.000Z", "say \"hi\"\n\tthen\\go",
	"<b>&amp;</b>", "\u2028\u2029", "bad \xff utf8", "ctl \x01\x1f\x7f", "日本語のプロンプト", "\u00e9t\u00e9"}

// fillAcc sets each stored field of the accumulator a points to from rng: empty
// (omitted) and set values, strings that need escaping, maps of several keys.
func fillAcc(a any, rng *rand.Rand, str func() string) {
	v := reflect.ValueOf(a).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if !v.Type().Field(i).IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(str())
		case reflect.Bool:
			f.SetBool(rng.IntN(2) == 0)
		case reflect.Int, reflect.Int64:
			f.SetInt([]int64{0, 1, 7, 12345, -3, 1 << 40}[rng.IntN(6)])
		case reflect.Slice:
			n := rng.IntN(4)
			if n == 0 {
				if rng.IntN(2) == 0 {
					f.Set(reflect.MakeSlice(f.Type(), 0, 0)) // empty, not nil
				}
				continue
			}
			s := reflect.MakeSlice(f.Type(), n, n)
			for j := range n {
				s.Index(j).SetString(str())
			}
			f.Set(s)
		case reflect.Map:
			n := rng.IntN(14)
			if n == 0 {
				if rng.IntN(2) == 0 {
					f.Set(reflect.MakeMap(f.Type()))
				}
				continue
			}
			m := reflect.MakeMap(f.Type())
			for range n {
				m.SetMapIndex(reflect.ValueOf(rng.IntN(30)-2), reflect.ValueOf(str()))
			}
			f.Set(m)
		default:
			panic("unhandled field kind " + f.Kind().String())
		}
	}
}

// TestAccStateMatchesMarshal holds each accumulator's appendState to what
// encoding/json renders of it (marshalNoEscape), the tails' stored state.
func TestAccStateMatchesMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	str := func() string { return accStateStrings[rng.IntN(len(accStateStrings))] }
	for _, proto := range accStateKinds() {
		typ := reflect.TypeOf(proto).Elem()
		for i := range 3000 {
			a := reflect.New(typ).Interface()
			if i > 0 { // the first: all empty, "{}" or the version alone
				fillAcc(a, rng, str)
			}
			checkAccState(t, a)
		}
	}
}

func checkAccState(t *testing.T, a any) {
	t.Helper()
	want, err := marshalNoEscape(a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := accState(a.(Accumulator))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%T:\n got %s\nwant %s", a, got, want)
	}
}

func FuzzAccState(f *testing.F) {
	f.Add("a", "b\"\\", "\u2028<>&", int64(3), uint64(7))
	f.Add("", "\xff", "日本", int64(-1), uint64(0))
	f.Fuzz(func(t *testing.T, s1, s2, s3 string, n int64, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 1))
		strs := []string{"", s1, s2, s3}
		str := func() string { return strs[rng.IntN(len(strs))] }
		for _, proto := range accStateKinds() {
			a := reflect.New(reflect.TypeOf(proto).Elem()).Interface()
			fillAcc(a, rng, str)
			checkAccState(t, a)
		}
	})
}
