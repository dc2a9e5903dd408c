// Package search is sessionwatch's full-text index of conversations: a tokenizer
// (Unicode words, case and accent folding, CJK bigrams), a small query language,
// per-layout text extractors, and an on-disk inverted index of immutable segments
// that the daemon keeps current as an indexer.Consumer. docs/search.md describes
// the query language and the on-disk format.
package search
