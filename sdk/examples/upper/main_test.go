package main

import (
	"strings"
	"testing"

	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

func TestUpper(t *testing.T) {
	sdktest.Both(t, newSession, "upper.wasm", nil, func(t *testing.T, p sdktest.Plugin) {
		if _, err := p.Open(7, abi.KindTelnet, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		a, ems, err := p.Data(7, abi.Inbound, []byte("hello world!\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(sdktest.Apply(abi.Inbound, nil, a, ems)); got != "HELLO WORLD!\r\n" {
			t.Errorf("to_user = %q", got)
		}
		if ev := string(sdktest.Collect(ems, abi.Event)); !strings.Contains(ev, `"shout"`) {
			t.Errorf("no shout event: %q", ev)
		}
		a, ems, err = p.Data(7, abi.Outbound, []byte("ls\r\n"))
		if err != nil || a != abi.Continue || len(ems) != 0 {
			t.Errorf("outbound: action %d, %d emissions, err %v; want continue", a, len(ems), err)
		}
		if _, _, err := p.Data(99, abi.Inbound, []byte("x")); err == nil || !strings.Contains(err.Error(), "no open session 99") {
			t.Errorf("unknown session: err = %v", err)
		}
		st, _, err := p.ExportState(7)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Open(8, abi.KindTelnet, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ImportState(8, st); err != nil {
			t.Fatal(err)
		}
		_, ems, _ = p.Data(8, abi.Inbound, []byte("again!\n"))
		if ev := string(sdktest.Collect(ems, abi.Event)); !strings.Contains(ev, `"count":2`) {
			t.Errorf("count did not move with the state: %q", ev)
		}
	})
}
