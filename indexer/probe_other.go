//go:build !(linux && (amd64 || arm64 || loong64 || riscv64))

package indexer

// walk probes the directory at path, the source root.
func (p *prober) walk(path string) bool { return p.dir(path, ".") }

// probeRaw is true where Unchanged walks with the system calls themselves.
var probeRaw = false

// probeTypeless has no effect here (rawDir's knob).
var probeTypeless = false

// walkSub probes the directory rel (relative to the root), as the walk from
// the root would when it reaches it.
func (p *prober) walkSub(rel string) bool { return p.dirSub(rel) }

// rootListing is a listed root for a split walk: none here.
type rootListing struct{}

// listRoot: a walk is not split here.
func (ix *Indexer) listRoot() (*rootListing, bool) { return nil, false }

func (l *rootListing) close() {}

// walkPart is never called here (listRoot says no).
func (p *prober) walkPart(l *rootListing) bool { return false }
