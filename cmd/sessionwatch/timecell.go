package main

import (
	"math"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// localTime is a timestamp as the table shows it: local "2006-01-02 15:04",
// "-" when it cannot be read.
func localTime(ts string) string { return string(appendLocalTime(nil, ts)) }

// appendLocalTime appends localTime(ts) to b.
func appendLocalTime(b []byte, ts string) []byte {
	var tf timeFormatter
	return tf.append(b, ts)
}

// timeFormatter formats timestamps as localTime does, remembering the local
// zone's offset and the span it holds for, so that a timestamp of the common
// form (parseUTCSeconds's) is read and written in integer arithmetic: no
// time.Time, no zone lookup. A listing formats two per row, and time.Date and
// Time.Local were a tenth of `list --all`.
type timeFormatter struct {
	loc         *time.Location // nil: time.Local
	from, until int64          // the span [from, until) in unix seconds where off holds
	off         int64
	known       bool
}

func (tf *timeFormatter) append(b []byte, ts string) []byte {
	if sec, ok := unixUTCSeconds(ts); ok {
		if !tf.known || sec < tf.from || sec >= tf.until {
			tf.learn(sec)
		}
		days, rem := floorDiv(sec+tf.off, 86400)
		y, mo, d := civil(days)
		if y >= 1000 && y <= 9999 {
			two := func(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
			b = two(two(b, y/100), y%100)
			b = two(append(b, '-'), mo)
			b = two(append(b, '-'), d)
			b = two(append(b, ' '), rem/3600)
			return two(append(b, ':'), rem%3600/60)
		}
	}
	t, ok := parseUTCSeconds(ts)
	if !ok {
		t = indexer.ParseTime(ts)
	}
	if t.IsZero() {
		return append(b, '-')
	}
	return t.In(tf.location()).AppendFormat(b, "2006-01-02 15:04")
}

func (tf *timeFormatter) location() *time.Location {
	if tf.loc == nil {
		return time.Local
	}
	return tf.loc
}

// learn finds the local offset at sec and the span it holds for.
func (tf *timeFormatter) learn(sec int64) {
	t := time.Unix(sec, 0).In(tf.location())
	_, off := t.Zone()
	from, until := t.ZoneBounds()
	tf.off, tf.from, tf.until, tf.known = int64(off), math.MinInt64, math.MaxInt64, true
	if !from.IsZero() {
		tf.from = from.Unix()
	}
	if !until.IsZero() {
		tf.until = until.Unix()
	}
	if tf.from > sec || tf.until <= sec {
		tf.from, tf.until = sec, sec+1 // bounds not to be trusted: this second only
	}
}

// unixUTCSeconds is parseUTCSeconds(ts) as unix seconds.
func unixUTCSeconds(ts string) (int64, bool) {
	n := len(ts)
	if n < 20 || ts[n-1] != 'Z' || ts[4] != '-' || ts[7] != '-' || ts[10] != 'T' || ts[13] != ':' || ts[16] != ':' {
		return 0, false
	}
	if n > 20 {
		if ts[19] != '.' || n < 22 || n > 30 {
			return 0, false
		}
		for i := 20; i < n-1; i++ {
			if ts[i] < '0' || ts[i] > '9' {
				return 0, false
			}
		}
	}
	bad := false
	num := func(i, w int) int64 {
		v := int64(0)
		for _, c := range []byte(ts[i : i+w]) {
			if c < '0' || c > '9' {
				bad = true
			}
			v = v*10 + int64(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if bad || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	return daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + sec, true
}

// daysIn is the number of days of month mo of year y (proleptic Gregorian).
func daysIn(y, mo int64) int64 {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to y-mo-d (proleptic
// Gregorian; Howard Hinnant's algorithm), for y >= 0.
func daysFromCivil(y, mo, d int64) int64 {
	if mo <= 2 {
		y--
	}
	era, _ := floorDiv(y, 400)
	yoe := y - era*400
	mp := (mo + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil is daysFromCivil's inverse.
func civil(days int64) (y, mo, d int64) {
	z := days + 719468
	era, _ := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	mo = mp + 3
	if mo > 12 {
		mo -= 12
	}
	y = yoe + era*400
	if mo <= 2 {
		y++
	}
	return y, mo, d
}

// floorDiv is a divided by b (b > 0) rounded down, and the remainder.
func floorDiv(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// parseUTCSeconds reads the common form of a timestamp, "2006-01-02T15:04:05Z"
// with an optional fraction of 1 to 9 digits, to the second; ok is false for
// anything else (indexer.ParseTime then reads it). For every string it accepts it
// gives ParseTime's time but the fraction (TestParseUTCSecondsIsParseTime): a
// listing parses two per row, and time.Parse was a tenth of `list --all`.
func parseUTCSeconds(ts string) (time.Time, bool) {
	n := len(ts)
	if n < 20 || ts[n-1] != 'Z' || ts[4] != '-' || ts[7] != '-' || ts[10] != 'T' || ts[13] != ':' || ts[16] != ':' {
		return time.Time{}, false
	}
	if n > 20 {
		if ts[19] != '.' || n < 22 || n > 30 {
			return time.Time{}, false
		}
		for i := 20; i < n-1; i++ {
			if ts[i] < '0' || ts[i] > '9' {
				return time.Time{}, false
			}
		}
	}
	num := func(i, w int) int {
		v := 0
		for _, c := range []byte(ts[i : i+w]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	if t.Day() != d {
		return time.Time{}, false // the 31st of a shorter month
	}
	return t, true
}
