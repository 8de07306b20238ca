package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/devsim"
)

// netmikoScript times Netmiko's send_command on the same device: it
// connects once (Netmiko turns paging off with `terminal length 0`), runs
// the command n times and prints the milliseconds of each call and the
// last output's line count, as JSON.
const netmikoScript = `
import json, sys, time
from netmiko import ConnectHandler
host, port, user, pw, cmd, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
c = ConnectHandler(device_type="cisco_ios_telnet", host=host, port=port, username=user, password=pw, secret=pw)
ms, out = [], ""
for i in range(n + 1):
    t = time.perf_counter()
    out = c.send_command(cmd)
    if i:
        ms.append((time.perf_counter() - t) * 1000)
c.disconnect()
print(json.dumps({"ms": ms, "lines": out.count("\n") + 1}))
`

// BenchmarkRunCommandPeers: run_command of a ten-page `show logging` on the
// simulated IOS router (the dialect answers the pager), p50/p99 per call,
// beside Netmiko's send_command on the same device (Debian's
// python3-netmiko, device type cisco_ios_telnet), when installed.
func BenchmarkRunCommandPeers(b *testing.B) {
	const pass = "termhost"
	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{Personality: "cisco_ios", Username: "admin", Password: pass, NoColor: true})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	host, port, _ := net.SplitHostPort(dev.Addr())
	dir := b.TempDir()
	creds := filepath.Join(dir, "credentials.json")
	os.WriteFile(creds, []byte(fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"r1","host":%q,"port":%s,"username":"admin","password":%q}]}`,
		host, port, base64.StdEncoding.EncodeToString([]byte(pass)))), 0o600)
	h := startHost(b, "--log-level", "warn", "--credentials", creds, "--rules", filepath.Join(dir, "rules.json"), "--known-hosts", filepath.Join(dir, "kh"))
	id := h.must("telnet_connect", map[string]any{"credentialId": "r1", "dialect": "cisco_ios"})["sessionId"].(string)
	run := func() map[string]any {
		return h.must("run_command", map[string]any{"sessionId": id, "command": "show logging", "timeoutMs": 30000})
	}
	first := run()
	if first["reason"] != "done" || first["pages"].(float64) < 9 {
		b.Fatalf("run_command: %v", first["reason"])
	}
	lines := strings.Count(first["output"].(string), "\n")
	var lat []time.Duration
	for range b.N {
		t0 := time.Now()
		r := run()
		lat = append(lat, time.Since(t0))
		if r["reason"] != "done" {
			b.Fatalf("run_command: %v", r["reason"])
		}
	}
	percentiles(b, lat, "ms-run_command")
	b.ReportMetric(float64(lines), "lines")
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import netmiko").Run() != nil {
		b.Log("python3-netmiko not installed: Netmiko not measured (apt-get install python3-netmiko)")
		return
	}
	script := filepath.Join(dir, "netmiko_bench.py")
	os.WriteFile(script, []byte(netmikoScript), 0o644)
	out, err := exec.Command(py, script, host, port, "admin", pass, "show logging", fmt.Sprint(b.N)).Output()
	if err != nil {
		b.Fatalf("netmiko: %v\n%s", err, out)
	}
	var nm struct {
		MS    []float64 `json:"ms"`
		Lines int       `json:"lines"`
	}
	if err := json.Unmarshal(out, &nm); err != nil {
		b.Fatalf("netmiko output %q: %v", out, err)
	}
	var nlat []time.Duration
	for _, ms := range nm.MS {
		nlat = append(nlat, time.Duration(ms*float64(time.Millisecond)))
	}
	percentiles(b, nlat, "ms-netmiko")
	b.ReportMetric(float64(nm.Lines), "lines-netmiko")
}
