package proto

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	zt "github.com/ziutek/telnet"
	"pgregory.net/rapid"
)

// genZiutekStream generates a server stream restricted to what
// github.com/ziutek/telnet (v0.0.0-20180329124119) decodes correctly, so
// that any difference in application data is a real disagreement. The
// known differences of ziutek's conn.go, and how they are excluded:
//
//  1. No CR handling at all: ziutek delivers CR NUL as CR NUL (RFC 854 says
//     the NUL is not data). Normalized: in NVT mode the expected data is
//     ziutek's output with every CR NUL replaced by CR. For that to be
//     exact, a data CR is never directly followed by an IAC command other
//     than IAC IAC (we pair CR with the next data byte only if it comes
//     immediately; ziutek's output would glue CR and a NUL that come after
//     a command). A filler byte is inserted in that case.
//  2. No BINARY mode: ziutek cannot tell that CR NUL must be kept once the
//     server said WILL BINARY. In NVT mode WILL/WONT BINARY are not
//     generated; in binary mode the stream starts with IAC WILL BINARY
//     (which we accept), WONT BINARY is never sent, and ziutek's raw
//     output is compared unnormalized: both must keep every CR and NUL.
//  3. Commands other than GA, WILL/WONT/DO/DONT, SB and IAC IAC (NOP, DM,
//     BRK, IP, AO, AYT, EC, EL, EOR, a stray SE, bytes below 239) make
//     ziutek's Read fail with "unknown command"; they are not generated.
//  4. Inside a subnegotiation ziutek skips IAC x for any x other than SE
//     and keeps going until IAC SE, while we (like libtelnet) end the
//     subnegotiation at IAC x and process x as a command; IAC x (x not SE
//     or IAC) inside SB is not generated.
//  5. ziutek's subnegotiation skipper has no notion of the option byte, so
//     SB with option 255 (IAC) confuses it; that option is not generated.
//  6. Truncated commands at end of stream make ziutek return the error
//     instead of EOF; streams always end on a complete command.
//
// ziutek's replies (WONT/DONT to most things, an undoubled NAWS 255x255)
// go to the server, which only drains them; they do not affect data.
func genZiutekStream(t *rapid.T, binary bool) []byte {
	var b []byte
	if binary {
		b = append(b, IAC, WILL, BINARY)
	}
	// cmd appends a command starting with IAC, keeping CR away from it.
	cmd := func(c ...byte) {
		if !binary && len(b) > 0 && b[len(b)-1] == '\r' && !(c[0] == IAC && c[1] == IAC) {
			b = append(b, 'x')
		}
		b = append(b, c...)
	}
	opts := []byte{BINARY, ECHO, SGA, STATUS, TM, TTYPE, EOROPT, NAWS, TSPEED, LFLOW, LINEMODE, NEWENVIRON, 201, 254}
	for range rapid.IntRange(0, 60).Draw(t, "ntok") {
		switch rapid.IntRange(0, 8).Draw(t, "kind") {
		case 0, 1, 2:
			b = append(b, rapid.SliceOfN(rapid.SampledFrom([]byte("ab \r\n\x00\t\x1b\x80\xfe")), 1, 30).Draw(t, "text")...)
		case 3:
			cmd(IAC, IAC)
		case 4:
			b = append(b, rapid.SampledFrom([]string{"\r\x00", "\r\n", "\r\r\x00", "\r\x00\x00"}).Draw(t, "crform")...)
		case 5, 6:
			v := rapid.SampledFrom([]byte{WILL, WONT, DO, DONT}).Draw(t, "verb")
			o := rapid.SampledFrom(opts).Draw(t, "opt")
			if o == BINARY && (v == WONT || (v == WILL && !binary)) {
				continue // exclusion 2
			}
			cmd(IAC, v, o)
		case 7:
			o := rapid.SampledFrom([]byte{TTYPE, TSPEED, NEWENVIRON, NAWS, 201, 0}).Draw(t, "sbopt")
			sb := []byte{IAC, SB, o}
			for _, x := range rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, 2, 3, 'v', '\r', IAC, SE}), 0, 16).Draw(t, "payload") {
				sb = append(sb, x)
				if x == IAC {
					sb = append(sb, IAC)
				}
			}
			cmd(append(sb, IAC, SE)...)
		case 8:
			cmd(IAC, GA)
		}
	}
	return b
}

// ziutekRead serves stream over TCP and returns what ziutek's client reads
// from it until EOF.
func ziutekRead(ln net.Listener, stream []byte) ([]byte, error) {
	serverErr := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		drained := make(chan error, 1)
		go func() { // the client's negotiation replies
			_, err := io.Copy(io.Discard, conn)
			drained <- err
		}()
		if _, err := conn.Write(stream); err != nil {
			serverErr <- err
			return
		}
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			serverErr <- err
			return
		}
		serverErr <- <-drained // until the client closes
	}()

	c, err := zt.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	buf := make([]byte, 256)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			c.Close()
			<-serverErr
			return got, err
		}
	}
	c.Close()
	return got, <-serverErr
}

func TestDifferentialZiutek(t *testing.T) {
	if testing.Short() {
		t.Skip("uses TCP")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer ln.Close()
	var total, crnul int
	rapid.Check(t, func(t *rapid.T) {
		binary := rapid.Bool().Draw(t, "binary")
		stream := genZiutekStream(t, binary)
		zgot, err := ziutekRead(ln, stream)
		if err != nil {
			t.Fatalf("ziutek: %v (read %q)", err, zgot)
		}
		want := zgot
		if !binary {
			want = bytes.ReplaceAll(zgot, []byte("\r\x00"), []byte("\r")) // exclusion 1
		}
		r := feed(Config{}, cutAt(stream, drawCuts(t, len(stream)))...)
		if !bytes.Equal(r.data, want) {
			t.Fatalf("stream %q\n ours   %q\n ziutek %q", stream, r.data, zgot)
		}
		if r.emptyCalls != 0 {
			t.Fatal("empty Data call")
		}
		total += len(want)
		crnul += bytes.Count(zgot, []byte("\r\x00"))
	})
	t.Logf("compared %d data bytes (%d CR NUL pairs seen by ziutek)", total, crnul)
}
