package config

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// survives Marshal and Parse unchanged. The seeds run in plain go test.
func FuzzParse(f *testing.F) {
	f.Setenv("HOME", "/home/fuzz")
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"} {
		f.Setenv(k, "")
	}
	f.Setenv("SW_FUZZ_DIR", "/data")
	seeds := []string{
		`{}`,
		`{"sources":[]}`,
		`{"sources":null,"settle":null}`,
		`{"state_dir":"~/.local/state/sessionwatch","archive_dir":"~/.local/share/sessionwatch/archive",
		 "log_level":"info","log_format":"text","settle":"50ms","max_settle":"1s","rescan_interval":"1h",
		 "janitor":{"schedule":"@hourly","run_at_start":true,"dry_run":false,"active_grace":"1h",
		            "lock_stale_after":"48h","archive_retention":"off"},
		 "sources":[{"name":"wave","layout":"wave","root":"~/.wave/projects","enabled":true,
		   "retention":"14d","action":"archive","max_sessions":0,"warn_size":"1GiB",
		   "warn_count":500,"remove_empty_dirs":true,"native_index":true}]}`,
		`{"state_dir":"$SW_FUZZ_DIR/s","archive_dir":"${SW_FUZZ_DIR}/a","settle":0,"max_settle":"off",
		  "janitor":{"schedule":"*/5 * * * *","active_grace":"1w2d"},
		  "sources":[{"layout":"collab-terminals","root":"/p","kill_orphans":true},
		             {"layout":"hyperyolo","warn_size":5000000,"retention":"1.5d"}]}`,
		`{"janitor":{"schedule":"TZ=x"}}`,
		`{"janitor":{"schedule":"CRON_TZ=UTC 0 * * * *"}}`,
		`{"settle":"2s","bogus":1,"sources":[{"layout":"nope"},{"name":"Bad!"},5,{"layout":"wave","warn_size":"5XB"}]}`,
		`{"settle":"1ms","settle":"2ms"}`,
		"{\n  \"a\": 1,\n}",
		`[]`,
		``,
		`{"sources":[{"layout":"codex","root":"~/x/../y/","max_sessions":1e2,"warn_count":2.0}]}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := Parse(strings.NewReader(doc))
		if err != nil {
			if c != nil {
				t.Fatalf("Parse(%q) = %+v, %v; want nil config with an error", doc, c, err)
			}
			return
		}
		b, err := c.Marshal()
		if err != nil {
			t.Fatalf("Marshal(Parse(%q)) = %v", doc, err)
		}
		back, err := Parse(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %v, want no error\n%s", doc, err, b)
		}
		if !reflect.DeepEqual(back, c) {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %+v, want %+v", doc, back, c)
		}
	})
}

// FuzzParseDuration checks that every accepted duration prints in a form that
// parses back to the same value.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"14d", "36h", "1w2d", "90m", "off", "0", "1.5d", "1h30m0.5s", "-1h", "14x", "200000w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d.D < 0 || (d.Off && d.D != 0) || (!d.Off && d.D == 0) {
			t.Fatalf("ParseDuration(%q) = %#v, not normalized", s, d)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %#v, %v, want %#v (from %q)", d.String(), back, err, d, s)
		}
	})
}

// FuzzParseSize checks that every accepted size prints in a form that parses
// back to the same value.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"5MB", "1GiB", "1.5KiB", "512", "off", "0", "-1", "5XB", "9EiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, want >= 0", s, n)
		}
		back, err := ParseSize(n.String())
		if err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d, %v, want %d (from %q)", n.String(), back, err, n, s)
		}
	})
}
