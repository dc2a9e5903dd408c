//go:build !(linux && (amd64 || arm64 || loong64 || riscv64))

package indexer

// walk probes the directory at path, the source root.
func (p *prober) walk(path string) bool { return p.dir(path, ".") }

// probeRaw is true where Unchanged walks with the system calls themselves.
var probeRaw = false

// probeTypeless has no effect here (rawDir's knob).
var probeTypeless = false
