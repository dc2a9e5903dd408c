package indexer

import (
	"path/filepath"
	"strings"
)

// outputTab is what the indexer knows of the files it wrote (ix.outputs), by
// path. A daemon holds two per project, its catalog and its resume file: kept
// by their absolute paths in a map, they cost ~230 bytes each (the path, its
// map slot); here a project's two are one entry under its catalog key, ~90
// bytes for both. Other outputs (native indexes) are kept by their path.
type outputTab struct {
	catDir string                // CatalogDir of the source and a separator; "" before init
	cats   map[string]catOutputs // by catalog key
	other  map[string]output     // by path
}

// catOutputs are the outputs of one catalog key: its catalog file (0) and its
// resume file (1), each present if its bit in has is set.
type catOutputs struct {
	o   [2]output
	has uint8
}

// init makes the table empty, for the outputs of catalog directory catDir.
func (t *outputTab) init(catDir string) {
	*t = outputTab{catDir: catDir + string(filepath.Separator), cats: map[string]catOutputs{}, other: map[string]output{}}
}

// split tells where path is kept: under catalog key key, file i (ok), or by
// its path.
func (t *outputTab) split(path string) (key string, i int, ok bool) {
	rest, found := strings.CutPrefix(path, t.catDir)
	if !found || t.catDir == "" {
		return "", 0, false
	}
	key, name, found := strings.Cut(rest, string(filepath.Separator))
	if !found || key == "" {
		return "", 0, false
	}
	switch name {
	case CatalogName:
		return key, 0, true
	case ResumeName:
		return key, 1, true
	}
	return "", 0, false
}

// get is the output recorded for path.
func (t *outputTab) get(path string) (output, bool) {
	if key, i, ok := t.split(path); ok {
		e, found := t.cats[key]
		return e.o[i], found && e.has&(1<<i) != 0
	}
	o, ok := t.other[path]
	return o, ok
}

// set records o for path.
func (t *outputTab) set(path string, o output) {
	if key, i, ok := t.split(path); ok {
		e := t.cats[key]
		e.o[i] = o
		e.has |= 1 << i
		// A copy of the key: the map keeps the one it is given, and a part
		// of path would keep all of it.
		t.cats[strings.Clone(key)] = e
		return
	}
	if t.other == nil {
		t.other = map[string]output{}
	}
	t.other[path] = o
}

// del forgets path's output.
func (t *outputTab) del(path string) {
	if key, i, ok := t.split(path); ok {
		e, found := t.cats[key]
		if !found {
			return
		}
		e.o[i] = output{}
		if e.has &^= 1 << i; e.has == 0 {
			delete(t.cats, key)
		} else {
			t.cats[strings.Clone(key)] = e
		}
		return
	}
	delete(t.other, path)
}

// clear forgets every output.
func (t *outputTab) clear() {
	clear(t.cats)
	clear(t.other)
}

// free forgets every output and lets go of the memory that held them, which
// clear keeps (a map's buckets): Release.
func (t *outputTab) free() {
	*t = outputTab{catDir: t.catDir, cats: map[string]catOutputs{}}
}

// len is the number of outputs recorded.
func (t *outputTab) len() int {
	n := len(t.other)
	for _, e := range t.cats {
		n += int(e.has&1) + int(e.has>>1&1)
	}
	return n
}
