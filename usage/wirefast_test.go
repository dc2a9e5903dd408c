package usage

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// slowKey reads a key line as load did before decodeKeyFast: encoding/json, then
// fromWire.
func slowKey(line []byte) (fastKey, error) {
	var w wireKey
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&w); err != nil {
		return fastKey{}, err
	}
	fk := fastKey{k: ukey{w.K[0], w.K[1]}, commit: w.Commit, stamp: stampOf(&w)}
	id := func(s string) string { return s }
	if w.Live != nil {
		r, err := fromWire(*w.Live, id)
		if err != nil {
			return fastKey{}, err
		}
		fk.live = r
	}
	for _, wu := range w.Retired {
		r, err := fromWire(wu, id)
		if err != nil {
			return fastKey{}, err
		}
		fk.retired = append(fk.retired, r)
	}
	return fk, nil
}

// sameKey compares two readings of a line (an empty retired list is none).
func sameKey(a, b fastKey) bool {
	if len(a.retired) == 0 && len(b.retired) == 0 {
		a.retired, b.retired = nil, nil
	}
	norm := func(r *unitRec) {
		if r != nil && r.unitBody != nil && len(r.acc.Win) == 0 {
			r.acc.Win = nil
		}
		if r != nil && r.unitBody != nil && len(r.acc.Buckets) == 0 {
			r.acc.Buckets = nil
		}
	}
	for _, k := range []*fastKey{&a, &b} {
		norm(k.live)
		for _, r := range k.retired {
			norm(r)
		}
	}
	return reflect.DeepEqual(a, b)
}

var keyLineSeeds = []string{
	`{"k":["claude","p/a.jsonl"],"live":{"source":"claude","unit":"p/a.jsonl","layout":"claude","path":"/h/.claude/projects/p/a.jsonl","dev":65024,"ino":10113623,"offset":2346,"fp":"ff8f1dc5a79849af","session":"0e5b","type":"main","project":"/h/My Projects/x","window":[["48b1b869476d9ae4","7cbd7b7cebc87bc9","7cbd7b7cebc87bc9",false,1983305,"claude-opus-4-5",1440,528,0,1600]],"buckets":[[1983305,"claude-opus-4-5",1440,528,0,1600]]}}`,
	`{"k":["codex","2026/01/02/r.jsonl"],"live":{"source":"codex","unit":"2026/01/02/r.jsonl","layout":"codex","path":"/h/r.jsonl","dev":1,"ino":2,"offset":10,"state":{"model":"gpt-5","prev":[1,2,3,4,5]},"buckets":[[7,"gpt-5",1,2,0,-3]]},"retired":[{"source":"codex","unit":"2026/01/02/r.jsonl","layout":"codex","path":"/h/r.jsonl","retired":"2026-01-03T00:00:00.000Z","seen":[1,2,3,4]}]}`,
	`{"commit":true}`,
	`{"k":["a","b"]}`,
	`{"k":["a","b\u00e9\n"],"live":{"source":"a","unit":"b","layout":"mogzi","path":"/x","seen":[0,0,0,0]}}`,
	`{"k":["a","b"],"live":{"source":"a","source":"b"}}`,
	`{"k":["a","b"],"live":{"Source":"a"}}`,
	`{"k":["a","b"],"live":{"source":"a","dev":1.5}}`,
	`{"k":["a","b"],"live":{"source":"a","seen":[1,2,3]}}`,
	`{"k":["a","b"],"live":{"source":"a","window":[["zz","0","0",false,1,"m",1,2,3,4]]}}`,
	`{"k":["a","b"],"live":null}`,
	`{"k":["a","b","c"]}`,
	` { "k" : [ "a" , "b" ] , "live" : { "source" : "a" , "buckets" : [ [ 1 , "m" , 1 , 2 , 3 , 4 ] ] } } `,
	`{"commit":true,"summary":[7187,972832792]}`,
	`{"commit":true,"summary":[0,4294967295]}`,
	`{"commit":true,"summary":[1,4294967296]}`,
	`{"commit":true,"summary":[-1,2]}`,
	`{"commit":true,"summary":[1,2,3]}`,
	`{"commit":true,"summary":null}`,
}

// headersOf is a reading without the records' accounts (what decodeKeyHeaders keeps).
func headersOf(fk fastKey) fastKey {
	strip := func(r *unitRec) *unitRec {
		if r == nil {
			return nil
		}
		c := *r
		c.unitBody = nil
		return &c
	}
	fk.live = strip(fk.live)
	rs := fk.retired
	fk.retired = nil
	for _, r := range rs {
		fk.retired = append(fk.retired, strip(r))
	}
	return fk
}

// checkHeaders: decodeKeyHeaders reads every line decodeKeyFast reads, and the
// same headers as encoding/json does of any line it reads.
func checkHeaders(t *testing.T, line []byte) {
	t.Helper()
	id := func(s string) string { return s }
	hk, hok := decodeKeyHeaders(line, id)
	fk, fok := decodeKeyFast(line, id)
	if fok && (!hok || !sameKey(hk, headersOf(fk))) {
		t.Fatalf("decodeKeyHeaders(%q) = %+v (%v), decodeKeyFast's headers %+v", line, hk, hok, headersOf(fk))
	}
	if !hok {
		return
	}
	if want, err := slowKey(line); err == nil && !sameKey(hk, headersOf(want)) {
		t.Fatalf("decodeKeyHeaders(%q) = %+v, encoding/json: %+v", line, hk, headersOf(want))
	}
}

// TestDecodeKeyFast: the fast reader reads the ledger's own lines, gives up on
// what it does not read exactly as encoding/json would, and never disagrees.
func TestDecodeKeyFast(t *testing.T) {
	id := func(s string) string { return s }
	for i, s := range keyLineSeeds {
		fk, ok := decodeKeyFast([]byte(s), id)
		want, err := slowKey([]byte(s))
		if ok && (err != nil || !sameKey(fk, want)) {
			t.Errorf("seed %d: decodeKeyFast(%q) = %+v, want %+v (%v)", i, s, fk, want, err)
		}
		if (i < 5 || i == 13 || i == 14) && !ok { // the ledger's own shapes are read fast
			t.Errorf("seed %d: decodeKeyFast(%q) gave up", i, s)
		}
		checkHeaders(t, []byte(s))
	}
	fk, _ := decodeKeyFast([]byte(keyLineSeeds[13]), func(s string) string { return s })
	if fk.stamp == nil || *fk.stamp != (stamp{7187, 972832792}) || !fk.commit {
		t.Errorf("stamp read as %+v", fk)
	}
}

func FuzzDecodeKeyFast(f *testing.F) {
	for _, s := range keyLineSeeds {
		f.Add([]byte(s))
	}
	id := func(s string) string { return s }
	f.Fuzz(func(t *testing.T, line []byte) {
		checkHeaders(t, line)
		fk, ok := decodeKeyFast(line, id)
		if !ok {
			return
		}
		want, err := slowKey(line)
		if err != nil || !sameKey(fk, want) {
			t.Fatalf("decodeKeyFast(%q) = %+v, encoding/json: %+v (%v)", line, fk, want, err)
		}
	})
}
