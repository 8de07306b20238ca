package devsim

import (
	"fmt"
	"net/netip"
	"strings"
)

// device is the state shared by all sessions of one Server (guarded by
// Server.mu).
type device struct {
	hostname string
	ifaces   []*iface
}

type iface struct {
	typ      string // "GigabitEthernet", "Loopback"
	num      string // "0/1", "0"
	desc     string
	addr     netip.Prefix // invalid = unassigned
	shutdown bool
	carrier  bool // cable plugged in
	loopback bool
	seed     uint64 // for deterministic counters
}

func (f *iface) name() string { return f.typ + f.num }

// status returns the interface status and line protocol words.
func (f *iface) status() (status, proto string) {
	switch {
	case f.shutdown:
		return "administratively down", "down"
	case !f.carrier:
		return "down", "down"
	}
	return "up", "up"
}

func (f *iface) up() bool { return !f.shutdown && f.carrier }

func newDevice(hostname string) device {
	pfx := netip.MustParsePrefix
	return device{
		hostname: hostname,
		ifaces: []*iface{
			{typ: "GigabitEthernet", num: "0/0", desc: "uplink to core-sw1", addr: pfx("10.0.0.1/30"), carrier: true, seed: 1},
			{typ: "GigabitEthernet", num: "0/1", desc: "office LAN", addr: pfx("192.168.10.1/24"), carrier: true, seed: 2},
			{typ: "GigabitEthernet", num: "0/2", desc: "lab segment", addr: pfx("172.16.20.1/24"), carrier: true, shutdown: true, seed: 3},
			{typ: "GigabitEthernet", num: "0/3", carrier: false, seed: 4},
			{typ: "Loopback", num: "0", desc: "router-id", addr: pfx("10.255.255.1/32"), carrier: true, loopback: true, seed: 5},
		},
	}
}

// findIface resolves an interface name as typed: full or abbreviated type
// ("gi", "g", "GigabitEthernet", "lo") followed by the number, with or
// without a space in between.
func (d *device) findIface(name string) *iface {
	name = strings.ToLower(strings.ReplaceAll(name, " ", ""))
	i := strings.IndexAny(name, "0123456789")
	if i <= 0 {
		return nil
	}
	typ, num := name[:i], name[i:]
	for _, f := range d.ifaces {
		if f.num == num && strings.HasPrefix(strings.ToLower(f.typ), typ) {
			return f
		}
	}
	return nil
}

func maskString(bits int) string {
	var m [4]byte
	for i := 0; i < bits; i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(m).String()
}

func wildcardString(bits int) string {
	var m [4]byte
	for i := bits; i < 32; i++ {
		m[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(m).String()
}

// maskBits parses a dotted netmask ("255.255.255.0") into a prefix length.
func maskBits(s string) (int, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n := 0
	for n < 32 && v&(1<<(31-n)) != 0 {
		n++
	}
	if n < 32 && v<<n != 0 {
		return 0, false // not contiguous
	}
	return n, true
}

func (f *iface) mac() string {
	return fmt.Sprintf("5254.0012.34%02x", f.seed)
}
