package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Size is a byte count; 0 means off (what "off" means is documented on each
// field that has a Size).
//
// In JSON it is a number of bytes, or a string: a decimal number with an
// optional unit, decimal "B", "KB" (1e3), "MB" (1e6), "GB", "TB", "PB", "EB"
// or binary "KiB" (1024), "MiB", "GiB", "TiB", "PiB", "EiB" (units in any
// case), e.g. "5MB", "1GiB", "1.5GiB", "512B", "512"; or "off".
type Size int64

// sizeUnits lists the units from largest to smallest; String picks the first
// that divides a size exactly.
var sizeUnits = []struct {
	name string
	n    int64
}{
	{"EiB", 1 << 60}, {"EB", 1e18},
	{"PiB", 1 << 50}, {"PB", 1e15},
	{"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9},
	{"MiB", 1 << 20}, {"MB", 1e6},
	{"KiB", 1 << 10}, {"KB", 1e3},
	{"B", 1},
}

// ParseSize parses a size such as "5MB", "1GiB", "512B", "512" (bytes) or
// "off" (any case), which is 0. Fractions are allowed when the result is a
// whole number of bytes ("1.5KiB"). Negative sizes are rejected.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "off") {
		return 0, nil
	}
	i := 0
	for i < len(t) && (t[i] == '.' || ('0' <= t[i] && t[i] <= '9')) {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("invalid size %q: must not be negative", s)
	}
	if num == "" || num == "." || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	mult := int64(-1)
	if unit == "" {
		mult = 1
	}
	for _, u := range sizeUnits {
		if strings.EqualFold(unit, u.name) {
			mult = u.n
		}
	}
	if mult < 0 {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q", s, unit)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", s)
	}
	if !r.Num().IsInt64() {
		return 0, fmt.Errorf("invalid size %q: out of range", s)
	}
	return Size(r.Num().Int64()), nil
}

// String returns the canonical form, which ParseSize reads back to the same
// value: "off" for 0, else the number in the largest unit that divides it
// exactly ("1GiB", "5MB", "123B").
func (s Size) String() string {
	if s == 0 {
		return "off"
	}
	if s < 0 {
		return strconv.FormatInt(int64(s), 10) + "B"
	}
	for _, u := range sizeUnits {
		if int64(s)%u.n == 0 {
			return strconv.FormatInt(int64(s)/u.n, 10) + u.name
		}
	}
	panic("unreachable")
}

// MarshalJSON encodes s as its canonical string (see String).
func (s Size) MarshalJSON() ([]byte, error) {
	return json.Marshal(s.String())
}

// UnmarshalJSON accepts a whole number of bytes or a size string (see
// ParseSize).
func (s *Size) UnmarshalJSON(b []byte) error {
	v, err := sizeFromJSON(b)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

func sizeFromJSON(b []byte) (Size, error) {
	switch kindOf(b) {
	case "string":
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return 0, err
		}
		return ParseSize(str)
	case "number":
		n, err := jsonInt(b)
		if err != nil {
			return 0, fmt.Errorf("invalid size: %w", err)
		}
		if n < 0 {
			return 0, fmt.Errorf("invalid size: must not be negative")
		}
		return Size(n), nil
	}
	return 0, fmt.Errorf(`invalid size: must be a number of bytes or a string such as "5MB" or "off", not %s`, articleKind(kindOf(b)))
}

// jsonInt parses a JSON number that must be a whole int64 ("3", "1e3",
// "2.0").
func jsonInt(b []byte) (int64, error) {
	t := strings.TrimSpace(string(b))
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("not a number")
	}
	if err != nil || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, fmt.Errorf("out of range")
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("not a whole number")
	}
	return int64(f), nil
}
