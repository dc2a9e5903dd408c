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
	ix.releaseAfter = false
}

// WillRelease says the caller calls Release right after the indexer's next full
// pass (reindex): that pass's flush leaves what it read as it is rather than
// park it (parkLocked: a unit's accumulator dropped for its encoded state, its
// state and sessions for the catalog's resume file), which Release would drop
// a moment later anyway (an eighth of the flush's work on the pass's own
// thread at 100k sessions). The outputs are the same. A pass that renders
// parked sessions a batch at a time (renderAllLocked) still parks each batch.
func (ix *Indexer) WillRelease() {
	ix.mu.Lock()
	ix.releaseAfter = true
	ix.mu.Unlock()
}
