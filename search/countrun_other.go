//go:build !amd64 || purego

package search

// useCountAsm: no assembly here (countrun_amd64.go).
var useCountAsm = false

// countRun is blockWords.count.
func (c *blockWords) countRun(j int, doc uint32, tb []dictSlot, pairs []termTF) (int, []termTF) {
	return c.count(j, doc, tb, pairs)
}

// cutRun is blockWords.cut.
func (c *blockWords) cutRun(b *[blockSpan]byte, ws uint64, base, n int) int {
	return c.cut(b, ws, base, n)
}
