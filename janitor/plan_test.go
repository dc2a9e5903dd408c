package janitor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

var planNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// cand builds a candidate last active `active` ago whose file was modified
// `modified` ago.
func cand(id, project string, active, modified time.Duration, opts ...func(*Candidate)) Candidate {
	c := Candidate{
		Session: &indexer.Session{ID: id, Type: indexer.TypeMain, Project: project, File: "/r/" + id + ".jsonl",
			LastActiveAt: indexer.FormatTime(planNow.Add(-active)), SizeBytes: 100},
		Paths: []string{"/r/" + id + ".jsonl"}, Bytes: 100, Mtime: planNow.Add(-modified),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func corrupt(c *Candidate) { c.Session.Corrupt = true }
func invalid(c *Candidate) { c.Session.Invalid = true }
func subagentOf(parent string) func(*Candidate) {
	return func(c *Candidate) { c.Session.Type, c.Session.ParentID = indexer.TypeSubagent, parent }
}
func held(pid int) func(*Candidate) {
	return func(c *Candidate) { c.Hold = Hold{PID: pid, Why: "lock held", Hard: true} }
}
func size(n int64) func(*Candidate) { return func(c *Candidate) { c.Session.SizeBytes = n } }

// summary renders actions as "kind:id" (warnings as "warn:project"), for tables.
func summary(as []Action) string {
	var out []string
	for _, a := range as {
		switch a.Kind {
		case KindWarn:
			out = append(out, "warn:"+a.Project)
		case KindRemoveLock:
			out = append(out, "remove-lock:"+a.File)
		default:
			out = append(out, a.Kind+":"+a.ID)
		}
	}
	return strings.Join(out, " ")
}

func TestPlan(t *testing.T) {
	wave := Policy{Source: "wave", Retention: 14 * day, Action: KindArchive, ActiveGrace: time.Hour}
	with := func(p Policy, f func(*Policy)) Policy { f(&p); return p }
	tests := []struct {
		name  string
		cands []Candidate
		p     Policy
		want  string
	}{
		{"exactly at the retention boundary is kept", []Candidate{cand("a", "/p", 14*day, 14*day)}, wave, ""},
		{"one ns past the boundary is retired", []Candidate{cand("a", "/p", 14*day+1, 14*day+1)}, wave, "archive:a"},
		{"old lastActive but younger mtime is kept", []Candidate{cand("a", "/p", 30*day, 13*day)}, wave, ""},
		{"old mtime but younger lastActive is kept", []Candidate{cand("a", "/p", 13*day, 30*day)}, wave, ""},
		{"retention off retires nothing", []Candidate{cand("a", "/p", 300*day, 300*day)}, with(wave, func(p *Policy) { p.Retention = 0 }), ""},
		{"older-than works with retention off", []Candidate{cand("a", "/p", 3*day, 3*day), cand("b", "/p", day, day)},
			with(wave, func(p *Policy) { p.Retention, p.OlderThan = 0, 2*day }), "archive:a"},
		{"older-than replaces a longer retention", []Candidate{cand("a", "/p", 3*day, 3*day)},
			with(wave, func(p *Policy) { p.OlderThan = 2 * day }), "archive:a"},
		{"action delete", []Candidate{cand("a", "/p", 20*day, 20*day)}, with(wave, func(p *Policy) { p.Action = KindDelete }), "delete:a"},
		{"in use is never retired", []Candidate{cand("a", "/p", 20*day, 20*day, held(42))}, wave, "skip-in-use:a"},
		{"unsafe is never retired", []Candidate{cand("a", "/p", 20*day, 20*day, func(c *Candidate) { c.Unsafe = "symlink" })}, wave, "skip:a"},
		{"missing produces nothing", []Candidate{cand("a", "/p", 20*day, 20*day, func(c *Candidate) { c.Missing = true })}, wave, ""},
		{"corrupt is never retired by retention", []Candidate{cand("a", "/p", 20*day, 20*day, corrupt)}, wave, "skip:a"},
		{"invalid-only archives corrupt even with action delete", []Candidate{cand("a", "/p", time.Minute*0+2*day, 2*day, corrupt), cand("b", "/p", 20*day, 20*day)},
			with(wave, func(p *Policy) { p.InvalidOnly, p.Action = true, KindDelete }), "archive:a"},
		{"invalid-only retires invalid with the action", []Candidate{cand("a", "/p", 2*day, 2*day, invalid), cand("b", "/p", 20*day, 20*day)},
			with(wave, func(p *Policy) { p.InvalidOnly, p.Action = true, KindDelete }), "delete:a"},
		{"invalid-only still respects grace", []Candidate{cand("a", "/p", time.Minute, time.Minute, corrupt)},
			with(wave, func(p *Policy) { p.InvalidOnly = true }), "skip-in-use:a"},
		{"invalid-only with older-than bound", []Candidate{cand("a", "/p", 2*day, 2*day, invalid), cand("b", "/p", 9*day, 9*day, invalid)},
			with(wave, func(p *Policy) { p.InvalidOnly, p.OlderThan = true, 5*day }), "archive:b"},
		{"invalid is retired while retention is on", []Candidate{cand("a", "/p", 2*day, 2*day, invalid)}, wave, "archive:a"},
		{"invalid is kept while retention is off", []Candidate{cand("a", "/p", 2*day, 2*day, invalid)}, with(wave, func(p *Policy) { p.Retention = 0 }), ""},
		{"count cap keeps the newest N mains and takes subagents along",
			[]Candidate{cand("new", "/p", 1*day, 1*day), cand("mid", "/p", 2*day, 2*day), cand("old", "/p", 3*day, 3*day),
				cand("sub", "/p", 1*day, 1*day, subagentOf("old")), cand("other", "/q", 9*day, 9*day)},
			with(wave, func(p *Policy) { p.MaxSessions = 2 }), "archive:old archive:sub"},
		{"count cap 0 means none", []Candidate{cand("a", "/p", day, day), cand("b", "/p", 2*day, 2*day)}, wave, ""},
		{"count cap respects grace", []Candidate{cand("a", "/p", time.Minute, time.Minute), cand("b", "/p", 2*time.Minute, 10*time.Minute)},
			with(wave, func(p *Policy) { p.MaxSessions = 1 }), "skip-in-use:b"},
		{"count cap never retires a future mtime", []Candidate{cand("a", "/p", day, day), cand("b", "/p", 2*day, -time.Hour)},
			with(wave, func(p *Policy) { p.MaxSessions = 1 }), "skip:b"},
		{"future lastActive is not old", []Candidate{cand("a", "/p", -5*day, 20*day)}, wave, ""},
		{"future mtime is not old", []Candidate{cand("a", "/p", 20*day, -5*day)}, wave, ""},
		{"grace off lets the cap take a fresh session", []Candidate{cand("a", "/p", time.Minute, time.Minute), cand("b", "/p", 2*time.Minute, 2*time.Minute)},
			with(wave, func(p *Policy) { p.MaxSessions, p.ActiveGrace = 1, 0 }), "archive:b"},
		{"restore counts as activity", []Candidate{cand("a", "/p", 20*day, 20*day, func(c *Candidate) { c.Restored = planNow.Add(-2 * day) })}, wave, ""},
		{"stale locks go with the retired session",
			[]Candidate{cand("a", "/p", 20*day, 20*day, func(c *Candidate) { c.StaleLocks = []string{"/r/a.jsonl.lock"} }),
				cand("b", "/p", 2*day, 2*day, func(c *Candidate) { c.StaleLocks = []string{"/r/b.jsonl.lock"} })},
			wave, "archive:a remove-lock:/r/a.jsonl.lock"},
		{"warn count per project, after retirement",
			[]Candidate{cand("a", "/p", day, day), cand("b", "/p", day, day), cand("c", "/p", day, day), cand("d", "/p", 20*day, 20*day),
				cand("e", "/q", day, day), cand("f", "/q", day, day)},
			with(wave, func(p *Policy) { p.WarnCount = 2 }), "archive:d warn:/p"},
		{"warn size per project", []Candidate{cand("a", "/p", day, day, size(600)), cand("b", "/p", day, day, size(600)), cand("c", "/q", day, day, size(600))},
			with(wave, func(p *Policy) { p.WarnSize = 1000 }), "warn:/p"},
		{"warn once per project even over both limits", []Candidate{cand("a", "/p", day, day, size(600)), cand("b", "/p", day, day, size(600))},
			with(wave, func(p *Policy) { p.WarnSize, p.WarnCount = 1000, 1 }), "warn:/p"},
		{"no warning at the limit", []Candidate{cand("a", "/p", day, day, size(500)), cand("b", "/p", day, day, size(500))},
			with(wave, func(p *Policy) { p.WarnSize, p.WarnCount = 1000, 2 }), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(Plan(planNow, tt.cands, tt.p))
			if got != tt.want {
				t.Errorf("Plan(%s) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

func TestPlanDetails(t *testing.T) {
	p := Policy{Source: "wave", Retention: 14 * day, Action: KindArchive, ActiveGrace: time.Hour, WarnCount: 1}
	cs := []Candidate{cand("a", "/p", 20*day, 20*day), cand("b", "/p", 21*day, 21*day, held(4242)), cand("c", "/p", day, day), cand("d", "/p", day, day)}
	as := Plan(planNow, cs, p)
	if len(as) != 3 {
		t.Fatalf("Plan = %s, want archive, skip-in-use, warn", summary(as))
	}
	if a := as[0]; a.Bytes != 100 || a.File != "/r/a.jsonl" || a.Reason != "inactive 20d (retention 14d)" || len(a.Paths) != 1 || a.Project != "/p" {
		t.Errorf("archive action = %+v", a)
	}
	if a := as[1]; a.PID != 4242 || !strings.Contains(a.Reason, "in use by pid 4242: lock held") || !strings.Contains(a.Reason, "due: inactive 21d") {
		t.Errorf("skip action = %+v", a)
	}
	if a := as[2]; !strings.Contains(a.Reason, "3 sessions (warn_count 1)") || a.Hint == "" {
		t.Errorf("warn action = %+v, want the count and a hint", a)
	}
	// Pure: the same inputs give the same plan.
	if again := summary(Plan(planNow, cs, p)); again != summary(as) {
		t.Errorf("second Plan = %s, want %s", again, summary(as))
	}
}

func TestAgeString(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{20 * day, "20d"}, {50 * time.Hour, "2d2h"}, {90 * time.Minute, "1h30m"}, {5 * time.Minute, "5m"}, {42 * time.Second, "42s"}, {-time.Hour, "-1h"}} {
		if got := ageString(tt.d); got != tt.want {
			t.Errorf("ageString(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	if got := fmt.Sprint(humanBytes(1536)); got != "1.5 KiB" {
		t.Errorf("humanBytes(1536) = %q", got)
	}
}
