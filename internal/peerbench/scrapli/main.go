// Command scrapli times scrapligo's SendCommand over Telnet, for the
// run_command benchmarks in cmd/termhost (bench_devices_test.go). It lives
// in a Go module of its own so that termhost's go.mod never depends on
// scrapligo.
//
// It opens the device once (scrapligo logs in, acquires privilege-exec and
// turns paging off), then runs the command once for every line read from
// stdin and answers each with one line of JSON: the milliseconds the
// SendCommand call took and its output. The benchmark drives it a call at a
// time, interleaved with termhost's and Netmiko's calls.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/scrapli/scrapligo/driver/network"
	"github.com/scrapli/scrapligo/driver/options"
	"github.com/scrapli/scrapligo/platform"
	"github.com/scrapli/scrapligo/transport"
	"github.com/scrapli/scrapligo/util"
)

func main() {
	host := flag.String("host", "127.0.0.1", "device address")
	port := flag.Int("port", 23, "Telnet port")
	user := flag.String("username", "", "login name (unused by a password-only login)")
	pass := flag.String("password", "", "login password")
	secondary := flag.String("enable", "", "enable password (default: the login password)")
	command := flag.String("command", "show version", "the command to time")
	plat := flag.String("platform", "cisco_iosxe", "cisco_iosxe (scrapligo's own definition) or frr (an FRR vty, defined here)")
	flag.Parse()
	if *secondary == "" {
		*secondary = *pass
	}
	opts := []util.Option{
		options.WithTransportType(transport.TelnetTransport),
		options.WithPort(*port),
		options.WithAuthUsername(*user),
		options.WithAuthPassword(*pass),
		options.WithAuthSecondary(*secondary),
		// The Telnet transport waits a quarter of the socket timeout for
		// option negotiation before it reads the login; this shortens the
		// open only, not SendCommand.
		options.WithTimeoutSocket(2 * time.Second),
	}
	var d *network.Driver
	var err error
	switch *plat {
	case "frr":
		d, err = network.NewDriver(*host, append(opts, frrOptions()...)...)
	default:
		var p *platform.Platform
		if p, err = platform.NewPlatform(*plat, *host, opts...); err == nil {
			d, err = p.GetNetworkDriver()
		}
	}
	if err != nil {
		fail("driver: %v", err)
	}
	if err := d.Open(); err != nil {
		fail("open: %v", err)
	}
	defer d.Close()
	in := bufio.NewScanner(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		t0 := time.Now()
		r, err := d.SendCommand(*command)
		took := time.Since(t0)
		if err != nil {
			fail("send %q: %v", *command, err)
		}
		if r.Failed != nil {
			fail("send %q: %v", *command, r.Failed)
		}
		enc.Encode(map[string]any{"ms": float64(took.Microseconds()) / 1000, "output": r.Result})
	}
}

// frrOptions describe an FRR vty (zebra's, over Telnet) to scrapligo's
// network driver, which has no FRR platform of its own: cumulus_vtysh
// expects a Linux shell first, and cisco_iosxe's prompt patterns end right
// after `>` or `#` while FRR's prompts end with a space (against zebra,
// its open never finished). So: a password-only login, `name> ` and
// `name# ` prompts, enable with the enable password, and paging turned off
// on open (`terminal length 0`; FRR has no `terminal width`).
func frrOptions() []util.Option {
	levels := map[string]*network.PrivilegeLevel{
		"exec": {
			Name:    "exec",
			Pattern: `(?im)^[\w.\-]{1,63}>\s*$`,
		},
		"privilege-exec": {
			Name:           "privilege-exec",
			Pattern:        `(?im)^[\w.\-]{1,63}#\s*$`,
			PreviousPriv:   "exec",
			Deescalate:     "disable",
			Escalate:       "enable",
			EscalateAuth:   true,
			EscalatePrompt: `(?im)^password:\s*$`,
		},
		"configuration": {
			Name:         "configuration",
			Pattern:      `(?im)^[\w.\-]{1,63}\(config[\w.\-]*\)#\s*$`,
			PreviousPriv: "privilege-exec",
			Deescalate:   "end",
			Escalate:     "configure terminal",
		},
	}
	return []util.Option{
		options.WithPrivilegeLevels(levels),
		options.WithDefaultDesiredPriv("privilege-exec"),
		options.WithFailedWhenContains([]string{"% Unknown command", "% Command incomplete", "% Ambiguous command"}),
		options.WithNetworkOnOpen(func(d *network.Driver) error {
			if err := d.AcquirePriv(d.DefaultDesiredPriv); err != nil {
				return err
			}
			_, err := d.SendCommand("terminal length 0")
			return err
		}),
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scrapli: "+format+"\n", args...)
	os.Exit(1)
}
