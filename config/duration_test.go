package config

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Duration
		wantErr bool
	}{
		{"days", "14d", NewDuration(14 * Day), false},
		{"hours", "36h", NewDuration(36 * time.Hour), false},
		{"weeks and days", "1w2d", NewDuration(9 * Day), false},
		{"minutes", "90m", NewDuration(90 * time.Minute), false},
		{"milliseconds", "50ms", NewDuration(50 * time.Millisecond), false},
		{"fractional day", "1.5d", NewDuration(36 * time.Hour), false},
		{"mixed go units", "1h30m0.5s", NewDuration(time.Hour + 30*time.Minute + 500*time.Millisecond), false},
		{"micro sign", "3µs", NewDuration(3 * time.Microsecond), false},
		{"plus sign", "+2h", NewDuration(2 * time.Hour), false},
		{"surrounding space", " 1h ", NewDuration(time.Hour), false},
		{"off", "off", DurationOff, false},
		{"OFF any case", "OFF", DurationOff, false},
		{"zero", "0", DurationOff, false},
		{"zero with unit", "0s", DurationOff, false},
		{"zero days", "0d", DurationOff, false},
		{"empty", "", Duration{}, true},
		{"unknown unit", "14x", Duration{}, true},
		{"missing unit", "14", Duration{}, true},
		{"unit only", "d", Duration{}, true},
		{"negative", "-1h", Duration{}, true},
		{"double dot", "1..5h", Duration{}, true},
		{"space inside", "1d 2h", Duration{}, true},
		{"overflow days", "200000w", Duration{}, true},
		{"overflow sum", "2562047h1000000h", Duration{}, true},
		{"overflow go unit", "99999999999999999999s", Duration{}, true},
		{"word", "forever", Duration{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseDuration(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("ParseDuration(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseDurationErrorMessage(t *testing.T) {
	_, err := ParseDuration("14x")
	if got, want := err.Error(), `invalid duration "14x"`; got != want {
		t.Errorf("ParseDuration(%q) error = %q, want %q", "14x", got, want)
	}
}

func TestDurationString(t *testing.T) {
	tests := []struct {
		name string
		in   Duration
		want string
	}{
		{"off", DurationOff, "off"},
		{"zero value", Duration{}, "off"},
		{"off wins over span", Duration{D: time.Hour, Off: true}, "off"},
		{"days", NewDuration(14 * Day), "14d"},
		{"weeks print as days", NewDuration(2 * Week), "14d"},
		{"two days stay hours", NewDuration(48 * time.Hour), "48h"},
		{"one day stays hours", NewDuration(24 * time.Hour), "24h"},
		{"three days", NewDuration(72 * time.Hour), "3d"},
		{"hour", NewDuration(time.Hour), "1h"},
		{"hours", NewDuration(36 * time.Hour), "36h"},
		{"hours and minutes", NewDuration(90 * time.Minute), "1h30m"},
		{"minutes", NewDuration(10 * time.Minute), "10m"},
		{"seconds", NewDuration(time.Second), "1s"},
		{"milliseconds", NewDuration(50 * time.Millisecond), "50ms"},
		{"fraction", NewDuration(1500 * time.Millisecond), "1.5s"},
		{"odd", NewDuration(25*time.Hour + time.Nanosecond), "25h0m0.000000001s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("%#v.String() = %q, want %q", tt.in, got, tt.want)
			}
			back, err := ParseDuration(tt.want)
			if err != nil {
				t.Fatalf("ParseDuration(%q) = %v", tt.want, err)
			}
			if back.Enabled() != tt.in.Enabled() || (tt.in.Enabled() && back != tt.in) {
				t.Errorf("ParseDuration(%q) = %#v, want %#v", tt.want, back, tt.in)
			}
		})
	}
}

func TestDurationEnabled(t *testing.T) {
	tests := []struct {
		in   Duration
		want bool
	}{
		{DurationOff, false},
		{Duration{}, false},
		{Duration{D: -time.Second}, false},
		{Duration{D: time.Hour, Off: true}, false},
		{NewDuration(time.Nanosecond), true},
	}
	for _, tt := range tests {
		if got := tt.in.Enabled(); got != tt.want {
			t.Errorf("%#v.Enabled() = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Duration
		wantErr bool
	}{
		{"string", `"14d"`, NewDuration(14 * Day), false},
		{"off", `"off"`, DurationOff, false},
		{"number zero", `0`, DurationOff, false},
		{"string zero", `"0"`, DurationOff, false},
		{"number zero float", `0.0`, DurationOff, false},
		{"other number", `3600`, Duration{}, true},
		{"bool", `true`, Duration{}, true},
		{"bad string", `"14x"`, Duration{}, true},
		{"object", `{}`, Duration{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Duration
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("Unmarshal(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
	b, err := json.Marshal(struct{ A, B Duration }{NewDuration(36 * time.Hour), DurationOff})
	if got, want := string(b), `{"A":"36h","B":"off"}`; err != nil || got != want {
		t.Errorf("Marshal = %s, %v, want %s", got, err, want)
	}
}
