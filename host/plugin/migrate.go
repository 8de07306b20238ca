package plugin

import "github.com/termhost/termhost/internal/wasmhost"

// migrate moves the session to version cur at this chunk boundary, if both
// versions can carry state: state_export on the old instance, then the
// session is opened on a new instance with that state (openOn), and on_close
// on the old. If that is not possible the session stays on its version
// (which drains). Called with b locked.
func (b *Binding) migrate(cur *version, s wasmhost.Sink) {
	old, oin, osid := b.v, b.inst, b.sid
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
	if oin.lock() != nil {
		return // busy: the call fails over, onto the current version
	}
	if oin.dead != nil {
		oin.unlock()
		return
	}
	st, _, err := oin.wi.ExportState(osid)
	if err != nil {
		if !oin.trapped(err) {
			b.noMigrate = cur
			log.Info("plugin session stays on its version until it ends", "reason", err)
		}
		oin.unlock()
		return
	}
	oin.unlock()

	nin, _, err := cur.acquire()
	if err != nil {
		log.Warn("plugin session migration postponed", "error", err)
		return
	}
	if err := nin.lock(); err != nil {
		cur.release(nin)
		return
	}
	err = b.openOn(cur, nin, st, s)
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
		cur.release(nin)
		b.v, b.inst, b.sid = old, oin, osid
		b.ver.Store(old)
		b.noMigrate = cur
		log.Warn("plugin session migration failed; it stays on its version", "error", err)
		return
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
	log.Info("plugin session migrated")
}
