package devsim

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// recSink records decoder output as strings.
type recSink struct{ ev []string }

func (r *recSink) data(b byte) {
	if n := len(r.ev); n > 0 && strings.HasPrefix(r.ev[n-1], "D:") {
		r.ev[n-1] += string([]byte{b})
		return
	}
	r.ev = append(r.ev, "D:"+string([]byte{b}))
}
func (r *recSink) command(c byte)          { r.ev = append(r.ev, fmt.Sprintf("C:%d", c)) }
func (r *recSink) negotiate(v, o byte)     { r.ev = append(r.ev, fmt.Sprintf("N:%d,%d", v, o)) }
func (r *recSink) subneg(o byte, p []byte) { r.ev = append(r.ev, fmt.Sprintf("S:%d:%q", o, p)) }

func TestDecoderSplitInvariance(t *testing.T) {
	stream := []byte("ab\r\ncd\r\x00e\rf\nx")
	stream = append(stream, cmdIAC, cmdIAC, 'y', cmdIAC, cmdWILL, optTTYPE, cmdIAC, cmdDO, optEcho)
	stream = append(stream, cmdIAC, cmdSB, optNAWS, 0, 80, cmdIAC, cmdIAC, cmdIAC, cmdIAC, cmdIAC, cmdSE)
	stream = append(stream, cmdIAC, cmdSB, optTTYPE, sbIS)
	stream = append(stream, "VT100"...)
	stream = append(stream, cmdIAC, cmdSE, cmdIAC, cmdIP, '\r', cmdIAC, cmdNOP, '\n', cmdIAC, cmdAYT)
	stream = append(stream, cmdIAC, cmdSB, optNewEnviron, sbIS, envVAR, 'U', envVALUE, 'x', cmdIAC, cmdIP, 'z')
	stream = append(stream, cmdIAC, cmdSE, 'q') // stray SE is ignored

	var whole recSink
	var d decoder
	d.feed(stream, &whole)
	want := []string{
		"D:ab\r", "D:cd\re\rf\nx\xffy",
		fmt.Sprintf("N:%d,%d", cmdWILL, optTTYPE), fmt.Sprintf("N:%d,%d", cmdDO, optEcho),
		fmt.Sprintf("S:%d:%q", optNAWS, []byte{0, 80, 0xff, 0xff}),
		fmt.Sprintf("S:%d:%q", optTTYPE, append([]byte{0}, "VT100"...)),
		fmt.Sprintf("C:%d", cmdIP), "D:\r", fmt.Sprintf("C:%d", cmdNOP), fmt.Sprintf("C:%d", cmdAYT),
		fmt.Sprintf("S:%d:%q", optNewEnviron, []byte{sbIS, envVAR, 'U', envVALUE, 'x'}),
		fmt.Sprintf("C:%d", cmdIP), "D:zq",
	}
	// The data bytes of "ab\r\ncd" are delivered as 'a','b','\r' then 'c'...;
	// recSink merges consecutive data, so compare the concatenation.
	norm := func(ev []string) []string {
		var out []string
		for _, e := range ev {
			if n := len(out); n > 0 && strings.HasPrefix(e, "D:") && strings.HasPrefix(out[n-1], "D:") {
				out[n-1] += e[2:]
				continue
			}
			out = append(out, e)
		}
		return out
	}
	want = norm(want)
	if got := norm(whole.ev); !reflect.DeepEqual(got, want) {
		t.Fatalf("whole:\n got %q\nwant %q", got, want)
	}
	// Every two-piece split, then byte by byte, then random pieces.
	for cut := 0; cut <= len(stream); cut++ {
		var r recSink
		var d decoder
		d.feed(stream[:cut], &r)
		d.feed(stream[cut:], &r)
		if got := norm(r.ev); !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %d:\n got %q\nwant %q", cut, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		var r recSink
		var d decoder
		for p := stream; len(p) > 0; {
			n := min(len(p), 1+rng.IntN(5))
			d.feed(p[:n], &r)
			p = p[n:]
		}
		if got := norm(r.ev); !reflect.DeepEqual(got, want) {
			t.Fatalf("random split %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

func TestDecoderSBOverflow(t *testing.T) {
	var r recSink
	var d decoder
	p := []byte{cmdIAC, cmdSB, optTTYPE}
	p = append(p, make([]byte, maxSB+10)...)
	p = append(p, cmdIAC, cmdSE, 'k')
	d.feed(p, &r)
	if !reflect.DeepEqual(r.ev, []string{"D:k"}) {
		t.Fatalf("overflowed SB must be dropped: %q", r.ev)
	}
}

func TestParseEnviron(t *testing.T) {
	m := map[string]string{}
	parseEnviron([]byte{envVAR, 'U', 'S', 'E', 'R', envVALUE, 'b', 'o', 'b', envUSERVAR, 'X', envESC, envVALUE, envVALUE, 'v', envESC, 2, envVAR, 'E'}, m)
	want := map[string]string{"USER": "bob", "X\x01": "v\x02", "E": ""}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %q want %q", m, want)
	}
}

func TestOptionName(t *testing.T) {
	if OptionName(optNAWS) != "NAWS" || OptionName(200) != "200" {
		t.Fatal(OptionName(optNAWS), OptionName(200))
	}
}
