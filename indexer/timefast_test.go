package indexer

import (
	"testing"
	"time"
)

// FuzzParseRFC3339: ParseRFC3339, ParseTime and NormTime, which read a string in
// TimeLayout by hand, give what time.Parse(time.RFC3339Nano) (and FormatTime)
// give for any string.
func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{"2026-06-14T12:10:00.532Z", "2026-06-14T12:10:00Z", "2026-06-14T12:10:00.532+02:00",
		"2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00.000Z", "2100-02-29T00:00:00.000Z", "2000-02-29T00:00:00.000Z",
		"2026-04-31T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-00-01T00:00:00.000Z", "2026-01-00T00:00:00.000Z",
		"2026-01-01T24:00:00.000Z", "2026-01-01T23:60:00.000Z", "2026-01-01T23:59:60.000Z", "0000-01-01T00:00:00.000Z",
		"0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-06-14t12:10:00.532Z", "2026-06-14T12:10:00.532z",
		"2026-06-14T12:10:00,532Z", "+026-06-14T12:10:00.532Z", "2026-06-14T12:10:00.5a2Z", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := time.Parse(time.RFC3339Nano, s)
		got, ok := ParseRFC3339(s)
		// A zone other than Z is a new *Location each time: compare what it says.
		same := func(a, b time.Time) bool { return a.Equal(b) && a.String() == b.String() && a.IsZero() == b.IsZero() }
		if ok != (err == nil) || !same(got, want) || want.Location() == time.UTC && got != want {
			t.Fatalf("ParseRFC3339(%q) = %v, %v; want %v, %v", s, got, ok, want, err)
		}
		if got := ParseTime(s); !same(got, want) {
			t.Fatalf("ParseTime(%q) = %v, want %v", s, got, want)
		}
		norm := ""
		if err == nil && s != "" {
			norm = FormatTime(want)
		}
		if got := NormTime(s); got != norm {
			t.Fatalf("NormTime(%q) = %q, want %q", s, got, norm)
		}
	})
}
