package search

// liveUnits is the number of live units the writer knows.
func (x *Index) liveUnits() int { x.mu.Lock(); defer x.mu.Unlock(); return x.u.n }
