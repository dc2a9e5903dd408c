package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day and Week are the two units ParseDuration accepts on top of Go's.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// Duration is a span that may be disabled.
//
// In JSON it is a string of Go units plus "d" (24h) and "w" (7d), e.g. "14d",
// "36h", "1w2d", "90m", "50ms"; or "off"; or the number 0 or the string "0",
// which also mean off. A disabled Duration is normalized to {Off: true}; any
// span that parses to zero ("0s", "0d") is disabled too. What "off" means is
// documented on each field that has a Duration.
type Duration struct {
	D   time.Duration // the span; meaningful only when Off is false
	Off bool          // explicitly disabled
}

// DurationOff is the disabled Duration, the value ParseDuration returns for
// "off".
var DurationOff = Duration{Off: true}

// NewDuration returns an enabled Duration of d, or DurationOff when d is zero.
func NewDuration(d time.Duration) Duration {
	if d == 0 {
		return DurationOff
	}
	return Duration{D: d}
}

// Enabled reports whether the knob is on: not Off and a positive span.
func (d Duration) Enabled() bool { return !d.Off && d.D > 0 }

// String returns the canonical form, which ParseDuration reads back to the
// same value: "off" when disabled; whole days above two as "14d" (weeks are
// accepted on input but printed as days, so "2w" prints "14d"); other whole
// hours as "36h" or "48h";
// anything else in Go's notation without a trailing "0s" ("1h30m", "50ms",
// "1.5s").
func (d Duration) String() string {
	switch {
	case d.Off || d.D == 0:
		return "off"
	case d.D < 0:
		return d.D.String()
	case d.D%Day == 0 && d.D > 2*Day:
		return strconv.FormatInt(int64(d.D/Day), 10) + "d"
	case d.D%time.Hour == 0:
		return strconv.FormatInt(int64(d.D/time.Hour), 10) + "h"
	}
	s := d.D.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	return s
}

// ParseDuration parses a duration: Go units (ns, us, µs, ms, s, m, h) plus d
// and w, in any combination such as "1w2d" or "1.5d"; "off" (any case) or
// "0" for disabled. Negative spans are rejected. Surrounding space is
// ignored.
func ParseDuration(s string) (Duration, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "off") || t == "0" {
		return DurationOff, nil
	}
	bad := fmt.Errorf("invalid duration %q", s)
	if t == "" {
		return Duration{}, bad
	}
	if t[0] == '-' {
		return Duration{}, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	t = strings.TrimPrefix(t, "+")
	var total time.Duration
	for t != "" {
		// One term: a decimal number followed by a unit.
		i := 0
		for i < len(t) && (t[i] == '.' || ('0' <= t[i] && t[i] <= '9')) {
			i++
		}
		j := i
		for j < len(t) && t[j] != '.' && (t[j] < '0' || t[j] > '9') {
			j++
		}
		num, unit := t[:i], t[i:j]
		t = t[j:]
		if num == "" || unit == "" {
			return Duration{}, bad
		}
		mult := time.Duration(1)
		switch unit {
		case "d":
			unit, mult = "h", 24
		case "w":
			unit, mult = "h", 24*7
		}
		if !goUnits[unit] || strings.Count(num, ".") > 1 || num == "." {
			return Duration{}, bad
		}
		v, err := time.ParseDuration(num + unit)
		if err != nil {
			// The term is well formed, so time.ParseDuration failed on range.
			return Duration{}, fmt.Errorf("invalid duration %q: out of range", s)
		}
		if v > math.MaxInt64/mult {
			return Duration{}, fmt.Errorf("invalid duration %q: out of range", s)
		}
		v *= mult
		if total > math.MaxInt64-v {
			return Duration{}, fmt.Errorf("invalid duration %q: out of range", s)
		}
		total += v
	}
	return NewDuration(total), nil
}

// MarshalJSON encodes d as its canonical string (see String).
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON accepts a duration string (see ParseDuration) or the number 0
// (off). Any other number is rejected because its unit would be a guess.
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := durationFromJSON(b)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// goUnits are the units time.ParseDuration knows.
var goUnits = map[string]bool{"ns": true, "us": true, "µs": true, "μs": true, "ms": true, "s": true, "m": true, "h": true}

// errDurationNumber is returned for a bare non-zero number.
var errDurationNumber = errors.New(`invalid duration: a bare number is only allowed as 0 (off); use a string with a unit such as "1h" or "14d"`)

func durationFromJSON(b []byte) (Duration, error) {
	switch kindOf(b) {
	case "string":
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return Duration{}, err
		}
		return ParseDuration(s)
	case "number":
		if n, err := jsonInt(b); err == nil && n == 0 {
			return DurationOff, nil
		}
		return Duration{}, errDurationNumber
	}
	return Duration{}, fmt.Errorf(`invalid duration: must be a string such as "14d" or "off", not %s`, articleKind(kindOf(b)))
}
