package gen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// WriteOptions configure Store.Run.
type WriteOptions struct {
	// Writers is the number of concurrent writers (≥1). Each owns a disjoint share
	// of the targets, as each agent process owns its transcript.
	Writers int
	// Rate is the total number of appends per second over all writers; 0 appends as
	// fast as possible.
	Rate float64
	// Count stops after this many appends in all (0: no limit).
	Count int
	// Duration stops after this long (0: no limit; then Count or ctx must end it).
	Duration time.Duration
	// Partial is the fraction of appends written in two parts: the line without its
	// end first, the rest (with the newline) at the writer's next tick, so the file
	// ends in a partial line in between.
	Partial float64
	// Seed makes the choice of targets and split points deterministic.
	Seed int64
	// Targets are the sessions appended to (nil: every session of the store).
	Targets []*Session
	// Clock stamps each appended line. nil uses UniqueClock.
	Clock func() time.Time
	// OnAppend, if set, is called (from the writer's goroutine) once the last byte
	// of an append is written: done is when the write returned.
	OnAppend func(s *Session, ts time.Time, n int, done time.Time)
}

// WriteStats report what Run did.
type WriteStats struct {
	Appends  int64         // complete appends
	Bytes    int64         // bytes appended
	Partials int64         // appends written in two parts
	Elapsed  time.Duration // from start to the last write
}

// UniqueClock returns a clock whose readings are the wall clock rounded to the
// millisecond, but strictly increasing across all callers, so that every appended
// line carries a unique timestamp.
func UniqueClock() func() time.Time {
	var last atomic.Int64
	return func() time.Time {
		for {
			now := time.Now().UnixMilli()
			prev := last.Load()
			if now <= prev {
				now = prev + 1
			}
			if last.CompareAndSwap(prev, now) {
				return time.UnixMilli(now).UTC()
			}
		}
	}
}

// Run appends lines to the store's sessions from opt.Writers goroutines at
// opt.Rate until opt.Count, opt.Duration or ctx ends it. Every append opens the
// file with O_APPEND, writes and closes it, as the agents do. A partial line still
// pending when Run stops is completed before Run returns, so the store ends with
// whole lines only.
func (st *Store) Run(ctx context.Context, opt WriteOptions) (WriteStats, error) {
	if opt.Writers < 1 {
		opt.Writers = 1
	}
	targets := opt.Targets
	if targets == nil {
		targets = st.Sessions
	}
	if len(targets) == 0 {
		return WriteStats{}, errors.New("run writers: no sessions to append to")
	}
	if opt.Writers > len(targets) {
		opt.Writers = len(targets)
	}
	if opt.Clock == nil {
		opt.Clock = UniqueClock()
	}
	if opt.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Duration)
		defer cancel()
	}
	var (
		stats  WriteStats
		budget atomic.Int64 // appends left when opt.Count is set
		mu     sync.Mutex
		errs   []error
		wg     sync.WaitGroup
	)
	budget.Store(int64(opt.Count))
	start := time.Now()
	var interval time.Duration
	if opt.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(opt.Writers) / opt.Rate)
	}
	for w := 0; w < opt.Writers; w++ {
		var own []*Session
		for i := w; i < len(targets); i += opt.Writers {
			own = append(own, targets[i])
		}
		wr := &writer{st: st, opt: &opt, own: own, rng: newRand(mix(opt.Seed, "writer", w))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Stagger the writers so a rate is spread evenly, not in bursts.
			next := start.Add(interval * time.Duration(w) / time.Duration(opt.Writers))
			err := wr.loop(ctx, next, interval, &budget, opt.Count > 0)
			mu.Lock()
			defer mu.Unlock()
			stats.Appends += wr.stats.Appends
			stats.Bytes += wr.stats.Bytes
			stats.Partials += wr.stats.Partials
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	stats.Elapsed = time.Since(start)
	return stats, errors.Join(errs...)
}

type writer struct {
	st    *Store
	opt   *WriteOptions
	own   []*Session
	rng   *rand.Rand
	stats WriteStats

	// A split append waiting for its second part.
	pend     *Session
	pendRest []byte
	pendTS   time.Time
	pendN    int
}

func (w *writer) loop(ctx context.Context, next time.Time, interval time.Duration, budget *atomic.Int64, counted bool) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if interval > 0 {
			timer.Reset(time.Until(next))
			select {
			case <-ctx.Done():
				return w.finish()
			case <-timer.C:
			}
			next = next.Add(interval)
		} else if ctx.Err() != nil {
			return w.finish()
		}
		if err := w.finish(); err != nil {
			return err
		}
		if counted && budget.Add(-1) < 0 {
			return nil
		}
		if err := w.append(); err != nil {
			return err
		}
	}
}

// append writes one line to one of the writer's sessions, possibly only its first
// part.
func (w *writer) append() error {
	s := w.own[w.rng.IntN(len(w.own))]
	ts := w.opt.Clock()
	line := w.st.Next(s, ts)
	if w.opt.Partial > 0 && w.rng.Float64() < w.opt.Partial && len(line) > 1 {
		cut := 1 + w.rng.IntN(len(line)-1)
		if err := appendFile(w.st.Path(s), line[:cut]); err != nil {
			return err
		}
		w.stats.Partials++
		w.pend, w.pendRest, w.pendTS, w.pendN = s, line[cut:], ts, len(line)
		return nil
	}
	if err := appendFile(w.st.Path(s), line); err != nil {
		return err
	}
	w.done(s, ts, len(line))
	return nil
}

// finish completes a split append.
func (w *writer) finish() error {
	if w.pend == nil {
		return nil
	}
	s := w.pend
	w.pend = nil
	if err := appendFile(w.st.Path(s), w.pendRest); err != nil {
		return err
	}
	w.done(s, w.pendTS, w.pendN)
	return nil
}

func (w *writer) done(s *Session, ts time.Time, n int) {
	w.stats.Appends++
	w.stats.Bytes += int64(n)
	if w.opt.OnAppend != nil {
		w.opt.OnAppend(s, ts, n, time.Now())
	}
}

func appendFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("append %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	return nil
}
