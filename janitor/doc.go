// Package janitor keeps the session stores tidy without ever losing a session a
// user still needs (SPEC §5).
//
// A pass has three steps, kept apart so the decision can be tested at fixed times:
//
//  1. Gather: for every session of a source (taken from the indexer, never by
//     reading transcripts) collect the facts that protect it — a held lock (the
//     layout's lock files and the generic <file>.lock sidecar), a live pid in the
//     agent's registry, a process holding one of its files open (one /proc scan
//     per pass), its file mtime, and whether any of its paths is a symlink or lies
//     outside the source root. These are Candidates.
//  2. Plan: Plan(now, candidates, policy) is a pure function returning the
//     Actions: retire (archive or delete) by retention or by the count cap, skip
//     what is protected, remove the stale lock of a retired session, warn about
//     projects over their size or count limit.
//  3. Execute: archives are written atomically and made durable before an
//     original is removed, by the protocol of retire.go (lease, journal the
//     intent, move aside, archive, verify, remove; recover.go finishes or
//     undoes it after a crash); the source's indexer is updated with the removed paths
//     so the catalog and native index change in the same pass; empty project
//     directories are removed; old archives expire; every action is appended to
//     <state_dir>/journal.jsonl.
//
// Two layouts keep sessions as records of a shared file and are handled apart
// (hyperyolo.go, collab.go). A HyperYOLO record is retired by the same plan,
// but carried out on the store: under HyperYOLO's own lock directory
// (<store>.lock, busy under 30 s old: the store is then left for the next
// pass), the store is re-read and planned again, the retired records are
// appended to <archive_dir>/<source>/records.jsonl (RecordLine, fsync'd), and
// the store is rewritten via <store>.tmp with every other value unchanged.
// Collab terminal records are not retired by age: the tmux reconcile removes
// those whose tmux session is gone (archived the same way), renumbers the
// others' order, and reports (with kill_orphans: kills) live mc-<session>-*
// tmux sessions no record names.
//
// A pass holds a flock on <state_dir>/janitor.lock so it never overlaps another,
// in this process or another (the daemon's scheduled pass versus `clean`). A dry
// run reports every action and changes nothing, not even the journal.
//
// Janitor wires this to robfig/cron: New starts nothing, Run blocks until its
// context ends, RunOnce runs one pass now (for `run --once` and `clean`).
package janitor
