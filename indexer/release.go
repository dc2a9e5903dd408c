package indexer

// Release lets go of everything the indexer holds in memory of its units (their
// sessions, tails and accumulators) and of the files it wrote. A caller that is
// done with an indexer after a pass calls it: reindex passes over each source
// once, and without it every source's accumulators stay in memory to the end of
// the command, which the garbage collector scans again and again while the
// later sources are read. The catalogs on disk are not touched; a later pass
// starts as a new indexer's would (Load first to resume from them).
func (ix *Indexer) Release() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.forgetKeysLocked()
	ix.units.clear()
	ix.outputs.free()
	ix.baseKeys = map[string]string{}
	ix.keys = map[string]string{}
	ix.owners = nil
	ix.rereads = nil
	ix.dirtyDirs = map[string]bool{}
	ix.dirtyProjects = map[string]bool{}
	ix.touched = map[string]bool{}
	ix.hot = nil
	ix.restored = nil
	ix.rendered = map[string]string{}
	ix.failed = nil
	ix.genKnown = false
}
