package plugin

import (
	"errors"

	"github.com/termhost/termhost/internal/wasmhost"
)

// migrate moves the session to version cur at this chunk boundary, if both
// versions can carry state (see move). If that is not possible the session
// stays on its version (which drains). Called with b locked.
func (b *Binding) migrate(cur *version, s wasmhost.Sink) {
	old, oin := b.v, b.inst
	if cur == b.noMigrate || oin == nil || oin.wi.Stuck() {
		return
	}
	log := b.r.log.With("plugin", b.p.name, "from", old.man.Version, "to", cur.man.Version)
	if old.trusted && !cur.trusted {
		// Not expected (every version of a trusted name is trusted), but a
		// session that may have been typed secrets into never moves to
		// code the user did not allow.
		b.noMigrate = cur
		log.Warn("plugin session stays on its version until it ends: the new version is not trusted")
		return
	}
	if !old.hasState || !cur.hasState {
		b.noMigrate = cur
		log.Info("plugin session stays on its version until it ends (no state export)")
		return
	}
	switch err := b.move(cur, s); {
	case err == nil:
		log.Info("plugin session migrated")
	case errors.Is(err, errMoveBusy):
	case errors.Is(err, errMovePostponed):
		log.Warn("plugin session migration postponed", "error", err)
	case isTrap(err):
		// The old instance died under the export: the call fails over,
		// onto the current version.
	default:
		b.noMigrate = cur
		log.Warn("plugin session migration failed; it stays on its version", "error", err)
	}
}

// compact moves a session that is alone on its instance to a fresh one of
// the same version, carrying its state, once the instance's memory has
// grown past half its cap. Linear memory never shrinks, and a plugin whose
// collector never moves an object (the vt plugin, built with TinyGo)
// fragments its heap under a screen at its worst, paged, resized and fed
// again, until a large reply finds no room below the cap: the instance
// would trap and the session be rebuilt from its raw buffer, losing older
// history. An import into a fresh instance lays the same state out whole.
// A session whose fresh instance is past half its cap at once needs that
// memory: it is not moved again from there. Called with b locked, at a
// call's boundary.
func (b *Binding) compact(s wasmhost.Sink) {
	in, v := b.inst, b.v
	if in == nil || in == b.noCompact || !v.hasState {
		return
	}
	half := uint64(b.r.cfg.MemoryLimitMiB) << 19
	from := uint64(in.wi.MemSize())
	if from <= half || in.wi.Stuck() {
		return
	}
	v.mu.Lock()
	alone := in.load == 1
	v.mu.Unlock()
	if !alone {
		return
	}
	log := b.r.log.With("plugin", b.p.name, "version", v.man.Version)
	if err := b.move(v, s); err != nil {
		if !errors.Is(err, errMoveBusy) {
			b.noCompact = in
		}
		log.Debug("plugin session kept on its instance past half its memory cap", "MiB", from>>20, "error", err)
		return
	}
	to := uint64(b.inst.wi.MemSize())
	if to > half {
		b.noCompact = b.inst
	}
	log.Debug("plugin session moved to a fresh instance: its instance's memory had passed half the cap",
		"from_MiB", from>>20, "to_MiB", to>>20)
}

var (
	errMoveBusy      = errors.New("the instance is busy")
	errMovePostponed = errors.New("no instance to move to")
	errMoveSame      = errors.New("the pool gave the same instance")
)

// move moves the session to a new instance of version to: state_export on
// its instance, then the session is opened on the new one with that state
// (openOn), and on_close on the old, which is released. If a step fails
// the session stays where it was, open, and the error says why:
// errMoveBusy and errMovePostponed are worth another try later. Called
// with b locked.
func (b *Binding) move(to *version, s wasmhost.Sink) error {
	old, oin, osid := b.v, b.inst, b.sid
	if oin.lock() != nil {
		return errMoveBusy // the call fails over
	}
	if oin.dead != nil {
		oin.unlock()
		return errMoveBusy
	}
	st, _, err := oin.wi.ExportState(osid)
	oin.trapped(err)
	oin.unlock()
	if err != nil {
		return err
	}

	nin, _, err := to.acquire()
	if err != nil {
		return errors.Join(errMovePostponed, err)
	}
	if nin == oin {
		to.release(nin)
		return errMoveSame
	}
	if err := nin.lock(); err != nil {
		to.release(nin)
		return errors.Join(errMoveBusy, err)
	}
	err = b.openOn(to, nin, st, s)
	nin.unlock()
	if err != nil {
		// openOn moved the binding only if on_open worked: put it back on
		// the old instance, whose session is still open.
		if b.inst == nin {
			if nin.lock() == nil {
				if nin.dead == nil {
					_, cerr := nin.wi.CloseSession(b.sid)
					nin.trapped(cerr)
				}
				delete(nin.sids, b.sid)
				nin.unlock()
			}
		}
		to.release(nin)
		b.v, b.inst, b.sid = old, oin, osid
		b.ver.Store(old)
		return err
	}
	if oin.lock() == nil {
		if oin.dead == nil {
			_, err := oin.wi.CloseSession(osid)
			oin.trapped(err)
		}
		delete(oin.sids, osid)
		oin.unlock()
	}
	old.release(oin)
	return nil
}
