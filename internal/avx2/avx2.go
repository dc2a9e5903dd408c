// Package avx2 says whether the vector code of indexer (scanMasks) and search
// (classify64) may run: AVX2 on amd64, the purego tag not set.
package avx2
