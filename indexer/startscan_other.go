//go:build !(linux && (amd64 || arm64 || loong64 || riscv64))

package indexer

// startScanRaw has no effect here: Start walks with walkLocked.
var startScanRaw = false

// scanStartLocked: Start walks with walkLocked on this system.
func (ix *Indexer) scanStartLocked() (natives map[string]bool, ok bool) {
	return nil, false
}

// Prove does nothing here: Start walks with walkLocked.
func (ix *Indexer) Prove() {}

// startScan is Start's listing where there is one (startscan_linux.go).
type startScan struct{}
