// Package indexer maintains sessionwatch's catalogs: one sessions-index.json per
// (source, project) in the state directory, plus native indexes in the agents' own
// schemas. It tails JSONL session files incrementally (reading only appended bytes),
// re-parses whole-document stores when they change, and can rebuild or check every
// index from the session files alone.
//
// Each agent's on-disk format is one Layout in its own file. The Indexer for a source
// is safe for concurrent use: the daemon's event loop feeds it batches of changed
// paths, and the janitor and CLI act through the same methods so the catalog changes
// in the same pass as the files.
package indexer
