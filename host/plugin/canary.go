package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// canarySample is what a canary session is fed: text, a prompt, Telnet
// negotiation, an escape sequence and a UTF-8 character — a little of
// what every kind of session sees.
var canarySample = []byte("login: \xff\xfd\x18\xff\xfb\x01\x1b[1mhello\x1b[0m caf\xc3\xa9\r\n$ ")

// canary checks a version in a throwaway instance before it is published:
// it instantiates and configures the module, and for every session kind the
// plugin declares opens a session, feeds it a sample chunk in both
// directions and closes it — all within the call deadline. A version that
// cannot (it traps, loops, refuses to open) is never published.
func (v *version) canary() error {
	v.r.canaries.Add(1)
	wi, err := v.mod.Instantiate(context.Background(), v.config)
	if err != nil {
		return err
	}
	v.hasState = wi.HasState()
	done := make(chan error, 1)
	go func() {
		for i, k := range v.man.Kinds() {
			sid := uint32(i + 1)
			if _, err := wi.Open(sid, k, nil); err != nil {
				done <- fmt.Errorf("open a %s session: %w", k, err)
				return
			}
			for _, dir := range []abi.Dir{abi.Inbound, abi.Outbound} {
				if _, _, err := wi.Data(sid, dir, canarySample); err != nil && !isStatus(err) {
					done <- fmt.Errorf("%s sample chunk on a %s session: %w", dirName(dir), k, err)
					return
				}
			}
			if _, err := wi.CloseSession(sid); err != nil {
				done <- fmt.Errorf("close a %s session: %w", k, err)
				return
			}
		}
		done <- nil
	}()
	// A guarded call is aborted at the deadline and returns; an unguarded
	// one may never return, so the canary does not wait for ever.
	t := time.NewTimer(2*v.r.cfg.CallTimeout + time.Second)
	defer t.Stop()
	select {
	case err := <-done:
		wi.Close()
		return err
	case <-t.C:
		return fmt.Errorf("a sample call did not return within %v (the plugin loops)", v.r.cfg.CallTimeout)
	}
}

func dirName(d abi.Dir) string {
	if d == abi.Outbound {
		return "outbound"
	}
	return "inbound"
}
