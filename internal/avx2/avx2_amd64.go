//go:build amd64 && !purego

package avx2

// Supported is whether the CPU and OS support AVX2: the CPU has it, and the OS
// saves the YMM registers (CPUID and XGETBV, as the runtime checks).
var Supported = cpuHasAVX2()

func cpuHasAVX2() bool
