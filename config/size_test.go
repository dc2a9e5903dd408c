package config

import (
	"encoding/json"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Size
		wantErr bool
	}{
		{"decimal MB", "5MB", 5_000_000, false},
		{"decimal KB", "5KB", 5_000, false},
		{"decimal GB", "1GB", 1_000_000_000, false},
		{"binary GiB", "1GiB", 1 << 30, false},
		{"binary MiB", "2MiB", 2 << 20, false},
		{"binary KiB", "3KiB", 3 << 10, false},
		{"bytes unit", "512B", 512, false},
		{"bare bytes", "512", 512, false},
		{"lower case", "5mb", 5_000_000, false},
		{"space before unit", "5 MB", 5_000_000, false},
		{"fraction", "1.5KiB", 1536, false},
		{"terabytes", "2TB", 2_000_000_000_000, false},
		{"off", "off", 0, false},
		{"Off", "Off", 0, false},
		{"zero", "0", 0, false},
		{"zero with unit", "0MB", 0, false},
		{"empty", "", 0, true},
		{"negative", "-5MB", 0, true},
		{"unknown unit", "5XB", 0, true},
		{"unit only", "MB", 0, true},
		{"fraction of a byte", "1.5B", 0, true},
		{"overflow", "9EiB", 0, true},
		{"double dot", "1..5MB", 0, true},
		{"exponent", "1e6", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSize(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestSizeString(t *testing.T) {
	tests := []struct {
		in   Size
		want string
	}{
		{0, "off"},
		{1 << 30, "1GiB"},
		{5_000_000, "5MB"},
		{123, "123B"},
		{1536, "1536B"},
		{2048, "2KiB"},
		{1_000_000_000, "1GB"},
		{1_024_000, "1000KiB"},
		{5 << 40, "5TiB"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(tt.in), got, tt.want)
		}
		back, err := ParseSize(tt.want)
		if err != nil || back != tt.in {
			t.Errorf("ParseSize(%q) = %d, %v, want %d", tt.want, back, err, tt.in)
		}
	}
}

func TestSizeJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Size
		wantErr bool
	}{
		{"bytes number", `1048576`, 1 << 20, false},
		{"exponent number", `5e6`, 5_000_000, false},
		{"string", `"5MB"`, 5_000_000, false},
		{"off", `"off"`, 0, false},
		{"zero", `0`, 0, false},
		{"negative", `-1`, 0, true},
		{"fraction", `1.5`, 0, true},
		{"bool", `false`, 0, true},
		{"bad unit", `"5XB"`, 0, true},
		{"huge", `1e30`, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Size
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("Unmarshal(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
	b, err := json.Marshal([]Size{GiB, 0})
	if got, want := string(b), `["1GiB","off"]`; err != nil || got != want {
		t.Errorf("Marshal = %s, %v, want %s", got, err, want)
	}
}
