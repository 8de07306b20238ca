package plugin

import (
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// minTickGap keeps a plugin that asks for a tick in the past from making the
// tick goroutine spin.
const minTickGap = 5 * time.Millisecond

// tickLoop is the Registry's tick goroutine: it calls on_tick on instances
// with sessions when they asked for it, or at least every TickInterval. It
// ends when the Registry closes.
func (r *Registry) tickLoop() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := r.tickDue(time.Now())
		timer.Reset(max(time.Until(next), minTickGap))
		select {
		case <-r.done:
			return
		case <-r.tickWake:
		case <-timer.C:
		}
	}
}

// tickDue ticks every instance that is due and returns when the next one
// will be.
func (r *Registry) tickDue(now time.Time) time.Time {
	next := now.Add(time.Hour)
	if r.cfg.TickInterval > 0 {
		next = now.Add(r.cfg.TickInterval)
	}
	r.mu.Lock()
	vs := make([]*version, 0, len(r.versions))
	for v := range r.versions {
		vs = append(vs, v)
	}
	r.mu.Unlock()
	var ins []*instance
	for _, v := range vs {
		v.mu.Lock()
		for _, in := range v.insts {
			if in.load > 0 && !in.wi.Stuck() {
				ins = append(ins, in)
			}
		}
		v.mu.Unlock()
	}
	for _, in := range ins {
		if r.closed.Load() {
			break
		}
		at := r.dueAt(in)
		if !at.After(now) {
			r.tick(in, now)
			at = r.dueAt(in)
		}
		if at.Before(next) {
			next = at
		}
	}
	return next
}

func (r *Registry) dueAt(in *instance) time.Time {
	at := time.Time{}
	if r.cfg.TickInterval > 0 {
		at = in.lastTick.Add(r.cfg.TickInterval)
	}
	if in.wantTick > 0 {
		want := time.UnixMilli(in.wantTick)
		if at.IsZero() || want.Before(at) {
			at = want
		}
	}
	if at.IsZero() {
		return time.Now().Add(time.Hour)
	}
	return at
}

// tick calls on_tick on one instance and routes its emissions to the
// sessions' OnAsync callbacks (state emissions become checkpoints).
func (r *Registry) tick(in *instance, now time.Time) {
	in.lastTick = now
	if in.lock() != nil {
		return // a call runs past its deadline; the next tick looks again
	}
	if in.dead != nil {
		in.unlock()
		return
	}
	want, ems, err := in.wi.Tick(now.UnixMilli())
	if err != nil {
		in.trapped(err)
		in.unlock()
		return
	}
	if want > 0 && want < now.Add(minTickGap).UnixMilli() {
		want = now.Add(minTickGap).UnixMilli()
	}
	in.wantTick = want
	var (
		order  []*Binding
		routed map[*Binding][]abi.Emission
	)
	for _, e := range ems {
		b := in.sids[e.SID]
		if b == nil {
			if e.Stream == abi.Log {
				r.log.Info("plugin log", "plugin", in.v.man.Name, "version", in.v.man.Version, "line", string(e.Data))
			}
			continue
		}
		if e.Stream == abi.State {
			b.setCheckpoint(e.Data)
			continue
		}
		if routed == nil {
			routed = make(map[*Binding][]abi.Emission)
		}
		if _, seen := routed[b]; !seen {
			order = append(order, b)
		}
		routed[b] = append(routed[b], abi.Emission{SID: e.SID, Stream: e.Stream, Data: clone(e.Data)})
	}
	in.unlock()
	for _, b := range order {
		b.deliverAsync(routed[b])
	}
}
