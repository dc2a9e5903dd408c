package indexer

// ckey is a catalog key as a unit holds it (the catalog its parked sessions
// are in, the resume file its state is in): an index into the indexer's key
// table, 0 for none. A daemon holds two per unit; as ids they cost 8 bytes
// where two strings cost 32.
type ckey int32

// keyTab interns the catalog keys the units name. An id is freed when no unit
// field holds it any more (its project gone), and reused; a unit forgotten
// all at once (a reset, Release) lets go of them with forgetKeysLocked.
type keyTab struct {
	ids   map[string]ckey
	names []string // by id; names[0] is ""
	refs  []int32  // by id: how many unit fields hold it
	free  []ckey
}

// name is key k's name ("" for none).
func (t *keyTab) name(k ckey) string {
	if int(k) >= len(t.names) {
		return ""
	}
	return t.names[k]
}

// hold interns name for one more unit field and returns its id (0 for "").
func (t *keyTab) hold(name string) ckey {
	if name == "" {
		return 0
	}
	if k, ok := t.ids[name]; ok {
		t.refs[k]++
		return k
	}
	if t.ids == nil {
		t.ids = map[string]ckey{}
		t.names, t.refs = []string{""}, []int32{0}
	}
	var k ckey
	if n := len(t.free); n > 0 {
		k, t.free = t.free[n-1], t.free[:n-1]
		t.names[k], t.refs[k] = name, 1
	} else {
		k = ckey(len(t.names))
		t.names, t.refs = append(t.names, name), append(t.refs, 1)
	}
	t.ids[name] = k
	return k
}

// drop lets go of one unit field's hold of k.
func (t *keyTab) drop(k ckey) {
	if k == 0 || int(k) >= len(t.refs) || t.refs[k] <= 0 {
		return
	}
	if t.refs[k]--; t.refs[k] == 0 {
		delete(t.ids, t.names[k])
		t.names[k] = ""
		t.free = append(t.free, k)
	}
}

// skeyOf is the key of the catalog u's sessions are parked in ("": not parked).
func (ix *Indexer) skeyOf(u *unit) string { return ix.ktab.name(u.skey) }

// lazyKeyOf is the key of the resume file u's state is in ("": none).
func (ix *Indexer) lazyKeyOf(u *unit) string { return ix.ktab.name(u.lazyKey) }

// setSkey parks (k) or unparks ("") u's sessions' catalog key.
func (ix *Indexer) setSkey(u *unit, k string) {
	old := u.skey
	u.skey = ix.ktab.hold(k)
	ix.ktab.drop(old)
}

// setLazyKey sets the key of the resume file u's state is in ("": none).
func (ix *Indexer) setLazyKey(u *unit, k string) {
	old := u.lazyKey
	u.lazyKey = ix.ktab.hold(k)
	ix.ktab.drop(old)
}

// forgetKeysLocked lets go of every unit's keys, before the units are
// forgotten (a reload, Release): a key named only by forgotten units would stay
// in the table, held once more for every reload, for the daemon's life. The
// units' ids are cleared too, so one still referenced (ix.hot) can never drop a
// key a later unit holds.
func (ix *Indexer) forgetKeysLocked() {
	for u := range ix.units.all() {
		u.skey, u.lazyKey = 0, 0
	}
	ix.ktab = keyTab{}
}
