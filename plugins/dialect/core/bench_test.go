package core

import (
	"fmt"
	"strings"
	"testing"
)

// showRun returns what an IOS device sends for "show running-config" with
// the pager on: the echo, pages of 23 configuration lines each ending in
// " --More-- ", the erase sequence after each answer, and the prompt; cut
// into chunks of at most chunk bytes as a TCP stream arrives (a page is
// never merged with the next: the device waits for the answer).
func showRun(pages, chunk int) [][]byte {
	var sends []string
	var b strings.Builder
	b.WriteString("show running-config\r\nBuilding configuration...\r\n\r\n")
	n := 0
	for p := range pages {
		if p > 0 {
			b.WriteString("\b\b\b\b\b\b\b\b\b        \b\b\b\b\b\b\b\b\b")
		}
		for range 23 {
			switch n % 4 {
			case 0:
				fmt.Fprintf(&b, "interface GigabitEthernet0/%d\r\n", n%48)
			case 1:
				fmt.Fprintf(&b, " description uplink to core-%d (circuit ABC-%06d)\r\n", n%7, n)
			case 2:
				fmt.Fprintf(&b, " ip address 10.%d.%d.1 255.255.255.0\r\n", n%250, n%200)
			default:
				b.WriteString("!\r\n")
			}
			n++
		}
		if p < pages-1 {
			b.WriteString(" --More-- ")
		} else {
			b.WriteString("end\r\n\r\nR1#")
		}
		sends = append(sends, b.String())
		b.Reset()
	}
	var chunks [][]byte
	for _, s := range sends {
		for len(s) > 0 {
			k := min(chunk, len(s))
			chunks = append(chunks, []byte(s[:k]))
			s = s[k:]
		}
	}
	return chunks
}

// bulk returns n bytes of routing-table output (pager off) and the prompt,
// in chunks of chunk bytes.
func bulk(n, chunk int) [][]byte {
	var b strings.Builder
	b.WriteString("show ip route\r\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "B*    10.%d.%d.0/24 [20/0] via 192.168.%d.2, 1d02h, GigabitEthernet0/%d\r\n", i%250, i%200, i%250, i%4)
	}
	b.WriteString("R1#")
	s := b.String()
	var chunks [][]byte
	for len(s) > 0 {
		k := min(chunk, len(s))
		chunks = append(chunks, []byte(s[:k]))
		s = s[k:]
	}
	return chunks
}

// frrList returns zebra's `list` at 40 columns as captured
// (testdata/frr/list-40.trace): the reads after the command, six pages,
// five of them ending inside a line.
func frrList(b *testing.B) [][]byte {
	steps, _ := frrTrace(b, "list-40.trace")
	var chunks [][]byte
	for i, st := range steps {
		if st.Out == "list\r\n" {
			for _, st := range steps[i+1:] {
				chunks = append(chunks, []byte(st.In))
			}
		}
	}
	return chunks
}

// BenchmarkScanner: one command's output through a Scanner whose dialect
// was detected from a prompt, as in a session. "paged": 10 pages of
// show running-config in 1 KiB chunks, each pager answered and its erase
// sequence removed, then the prompt (done). "bulk": 64 KiB of routes in
// 4 KiB chunks (the pager off), then the prompt. "frr-cut": zebra's list
// at 40 columns (its pagers cut lines); "frr-bulk": the routes through
// the frr dialect (a pager cutting a line is looked for at the end of
// every chunk). One op is one command.
func BenchmarkScanner(b *testing.B) {
	for _, c := range []struct {
		name   string
		prompt string
		cmd    string
		chunks [][]byte
	}{
		{"paged", "\r\nR1#", "show running-config\r", showRun(10, 1024)},
		{"bulk", "\r\nR1#", "show ip route\r", bulk(64<<10, 4096)},
		{"frr-cut", "Hello, this is FRRouting (version 8.4.4).\r\n\r\nfrr-test> ", "list\r", frrList(b)},
		{"frr-bulk", "Hello, this is FRRouting (version 8.4.4).\r\n\r\nR1# ", "show ip route\r", bulk(64<<10, 4096)},
	} {
		b.Run(c.name, func(b *testing.B) {
			sc := New()
			sink := &countSink{}
			feed(sc, []byte(c.prompt), sink)
			if want := map[bool]string{true: "frr", false: "cisco_ios"}[strings.HasPrefix(c.name, "frr")]; sc.Info().Dialect != want {
				b.Fatalf("dialect %q", sc.Info().Dialect)
			}
			n := 0
			for _, ch := range c.chunks {
				n += len(ch)
			}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				sc.Outbound([]byte(c.cmd))
				for _, ch := range c.chunks {
					feed(sc, ch, sink)
				}
			}
			if sink.done == 0 {
				b.Fatal("no prompt")
			}
		})
	}
}
