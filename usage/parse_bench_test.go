package usage

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// BenchmarkParseLineMembers parses every line of a generated session of each
// layout from its scan, as a cold pass's read workers do (the scan not
// counted), on lines of the 20k search store's size (6 KiB):
//
//	go test -run '^$' -bench ParseLineMembers -benchmem ./usage/
func BenchmarkParseLineMembers(b *testing.B) {
	dir := b.TempDir()
	for _, layout := range gen.Layouts() {
		b.Run(layout, func(b *testing.B) {
			sp := gen.Spec{Layout: layout, Projects: 1, Sessions: 1, Lines: 300, Spread: -1, LineSize: 6144, Seed: 1}
			st, err := gen.Plan(gen.DefaultRoot(layout, filepath.Join(dir, layout)), sp)
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Write(); err != nil {
				b.Fatal(err)
			}
			data, err := os.ReadFile(st.Path(st.Sessions[0]))
			if err != nil {
				b.Fatal(err)
			}
			lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			scans := make([]indexer.Members, len(lines))
			for i, l := range lines {
				scans[i].Scan(l)
			}
			b.SetBytes(int64(len(data)))
			cpu := processCPU()
			for b.Loop() {
				var ps ParseState
				for i := range scans {
					ParseLineMembers(layout, &ps, &scans[i])
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the process's CPU time (user and system, every thread: the
// collector's too) in nanoseconds: on a loaded machine a benchmark's ns/op
// counts the time it waited for a core, its cpu-ns/op not.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
