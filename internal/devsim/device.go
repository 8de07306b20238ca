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
	for _, f := range d.ifaces {
		if strings.ToLower(f.name()) == name {
			return f
		}
	}
	i := strings.IndexAny(name, "0123456789")
	if i <= 0 {
		return nil
	}
	typ, num := name[:i], name[i:]
	for _, f := range d.ifaces {
		if typ == "ge" && f.typ == "GigabitEthernet" {
			typ = "gi" // Huawei's short form
		}
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

// newDeviceFor returns the device of a personality: the IOS one keeps its
// five interfaces; the others get eight ports and a loopback with the
// vendor's interface names, so that their long "show interfaces" spans
// about ten pages of 20 lines.
func newDeviceFor(personality, hostname string) device {
	var typ, lo string
	var num func(i int) string
	switch personality {
	case "cisco_nxos":
		typ, lo, num = "Ethernet", "loopback0", func(i int) string { return fmt.Sprintf("1/%d", i+1) }
	case "arista_eos":
		typ, lo, num = "Ethernet", "Loopback0", func(i int) string { return fmt.Sprint(i + 1) }
	case "juniper_junos":
		typ, lo, num = "ge-", "lo0", func(i int) string { return fmt.Sprintf("0/0/%d", i) }
	case "huawei":
		typ, lo, num = "GigabitEthernet", "LoopBack0", func(i int) string { return fmt.Sprintf("0/0/%d", i) }
	case "mikrotik_routeros":
		typ, lo, num = "ether", "lo", func(i int) string { return fmt.Sprint(i + 1) }
	case "frr", "linux":
		typ, lo, num = "eth", "lo", func(i int) string { return fmt.Sprint(i) }
	default:
		return newDevice(hostname)
	}
	pfx := netip.MustParsePrefix
	base := newDevice(hostname).ifaces
	d := device{hostname: hostname}
	for i := 0; i < 8; i++ {
		f := &iface{typ: typ, num: num(i), carrier: true, seed: uint64(i + 1)}
		if i < 4 {
			b := base[i]
			f.desc, f.addr, f.shutdown, f.carrier = b.desc, b.addr, b.shutdown, b.carrier
		} else {
			f.desc = fmt.Sprintf("rack %d", i)
			f.addr = pfx(fmt.Sprintf("10.1.%d.1/24", i))
		}
		d.ifaces = append(d.ifaces, f)
	}
	i := strings.IndexAny(lo, "0123456789")
	if i < 0 {
		i = len(lo)
	}
	d.ifaces = append(d.ifaces, &iface{typ: lo[:i], num: lo[i:], desc: "router-id", addr: pfx("10.255.255.1/32"), carrier: true, loopback: true, seed: 9})
	return d
}

// snapshotIfaces copies the interfaces under the device lock.
func (c *session) snapshotIfaces() (host string, ifs []iface) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	for _, f := range c.s.dev.ifaces {
		ifs = append(ifs, *f)
	}
	return c.s.dev.hostname, ifs
}

// counters returns deterministic packet and byte counters of f.
func (f *iface) counters() (inPk, inBy, outPk, outBy uint64) {
	if !f.carrier || f.loopback {
		return
	}
	k := f.seed
	inPk, outPk = 128345*k+17, 98123*k+5
	return inPk, inPk*97 + k*13, outPk, outPk*103 + k*7
}

// macColon is the MAC address in 52:54:00:12:34:0x form.
func (f *iface) macColon() string {
	return fmt.Sprintf("52:54:00:12:34:%02x", f.seed)
}
