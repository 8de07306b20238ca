package proto

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSplitEveryPosition feeds each corpus stream unsplit, then split into
// two at every position (directly, and through a MarshalState /
// UnmarshalState hop into a new Conn at the split), and byte by byte.
func TestSplitEveryPosition(t *testing.T) {
	c := corpus()
	for _, name := range slices.Sorted(maps.Keys(c)) {
		stream := c[name]
		t.Run(name, func(t *testing.T) {
			for _, cfg := range []Config{{}, testCfg} {
				whole := feed(cfg, stream)
				if whole.emptyCalls != 0 {
					t.Fatal("empty Data call")
				}
				for k := 0; k <= len(stream); k++ {
					if d := whole.diff(feed(cfg, stream[:k], stream[k:])); d != "" {
						t.Fatalf("split at %d:\n%s", k, d)
					}
					if d := whole.diff(feedSnap(t, cfg, stream[:k], stream[k:])); d != "" {
						t.Fatalf("snapshot at %d:\n%s", k, d)
					}
				}
				var bytewise [][]byte
				for i := range stream {
					bytewise = append(bytewise, stream[i:i+1])
				}
				if d := whole.diff(feed(cfg, bytewise...)); d != "" {
					t.Fatalf("byte by byte:\n%s", d)
				}
			}
		})
	}
}

// TestCorpusExpectations pins down what the corpus streams decode to, so
// that the split tests compare against something known to be right.
func TestCorpusExpectations(t *testing.T) {
	c := corpus()
	r := feed(Config{}, c["data"])
	wantData := "hello\r\nworld\rbare\rcr\xffff\xff\xffxxxxxxxxxxxy\r\x00\r\r\r\n\n\r\xff\rpw:ok\r"
	if string(r.data) != wantData {
		t.Errorf("data\n got %q\nwant %q", r.data, wantData)
	}
	r = feed(testCfg, c["subneg"])
	if !bytes.Contains(r.data, []byte("bin\r\x00\r\n\xff\r\x00nvt\r")) {
		t.Errorf("subneg data %q", r.data)
	}
	r = feed(Config{}, c["overflow"])
	if string(r.data) != "after" {
		t.Errorf("overflow data %q", r.data)
	}
}

// TestSplitRandom splits generated and corpus streams at random positions,
// with and without a MarshalState/UnmarshalState hop at every cut.
func TestSplitRandom(t *testing.T) {
	corp := corpus()
	names := slices.Sorted(maps.Keys(corp))
	rapid.Check(t, func(t *rapid.T) {
		var stream []byte
		if rapid.Bool().Draw(t, "fromCorpus") {
			stream = corp[rapid.SampledFrom(names).Draw(t, "name")]
		} else {
			stream = genStream(t)
		}
		cfg := rapid.SampledFrom([]Config{{}, testCfg}).Draw(t, "cfg")
		cuts := drawCuts(t, len(stream))
		whole := feed(cfg, stream)
		if whole.emptyCalls != 0 {
			t.Fatal("empty Data call")
		}
		if d := whole.diff(feed(cfg, cutAt(stream, cuts)...)); d != "" {
			t.Fatalf("split at %v:\n%s", cuts, d)
		}
		if d := whole.diff(feedSnap(t, cfg, cutAt(stream, cuts)...)); d != "" {
			t.Fatalf("snapshots at %v:\n%s", cuts, d)
		}
	})
}

// TestSnapshotRandomPoint is the MarshalState property on its own: the
// state taken at a random point and restored into a NEW Conn continues
// exactly like the original, which keeps running too.
func TestSnapshotRandomPoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		stream := genStream(t)
		k := rapid.IntRange(0, len(stream)).Draw(t, "k")
		cfg := rapid.SampledFrom([]Config{{}, testCfg}).Draw(t, "cfg")

		orig := New(cfg)
		r0 := &recorder{}
		// Some requests of our own so WANT states and queue bits are
		// part of the snapshot.
		for _, o := range rapid.SliceOfN(rapid.SampledFrom([]byte{ECHO, NAWS, TTYPE, BINARY, 200}), 0, 4).Draw(t, "reqs") {
			orig.Request(o, rapid.Bool().Draw(t, "local"), rapid.Bool().Draw(t, "enable"), r0)
		}
		orig.Receive(stream[:k], r0)
		snap := orig.MarshalState()

		restored := New(Config{Term: "different"})
		if err := restored.UnmarshalState(snap); err != nil {
			t.Fatal(err)
		}
		ra, rb := &recorder{}, &recorder{}
		orig.Receive(stream[k:], ra)
		restored.Receive(stream[k:], rb)
		// Host actions after the restore behave the same too.
		orig.Resize(255, 10, ra)
		restored.Resize(255, 10, rb)
		orig.Encode([]byte("x\ry\xff"), ra)
		restored.Encode([]byte("x\ry\xff"), rb)
		if d := ra.diff(rb); d != "" {
			t.Fatalf("restored at %d differs:\n%s", k, d)
		}
		if !bytes.Equal(orig.MarshalState(), restored.MarshalState()) {
			t.Fatal("final states differ")
		}
	})
}

func TestUnmarshalStateRejects(t *testing.T) {
	c := New(testCfg)
	r := &recorder{}
	c.Receive(cat(IAC, DO, TTYPE, IAC, SB, 201, "abc", IAC), r)
	good := c.MarshalState()
	before := slices.Clone(good)
	if err := New(Config{}).UnmarshalState(good); err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{
		nil,
		[]byte("TNP"),
		[]byte("XXXX"),
		append(slices.Clone(good), 0),     // trailing byte
		good[:len(good)-1],                // truncated
		cat(good[:4], 9, good[5:]),        // bad parser state
		cat(good[:4], stOpt, 7, good[6:]), // bad verb
	}
	for i := 0; i < len(good); i++ { // every truncation
		bad = append(bad, good[:i])
	}
	for i, b := range bad {
		n := New(Config{})
		want := n.MarshalState()
		if err := n.UnmarshalState(b); err == nil {
			t.Errorf("case %d: accepted %x", i, b)
		}
		if !bytes.Equal(n.MarshalState(), want) {
			t.Errorf("case %d: failed UnmarshalState modified the Conn", i)
		}
	}
	if !bytes.Equal(good, before) {
		t.Fatal("snapshot modified")
	}
}

// TestZeroConn: a Conn not made by New still works and round-trips.
func TestZeroConn(t *testing.T) {
	var c Conn
	r := &recorder{}
	s := corpus()["subneg"]
	k := len(s) / 2
	c.Receive(s[:k], r)
	n := New(testCfg)
	if err := n.UnmarshalState(c.MarshalState()); err != nil {
		t.Fatal(err)
	}
	ra, rb := &recorder{}, &recorder{}
	c.Receive(s[k:], ra)
	n.Receive(s[k:], rb)
	if d := ra.diff(rb); d != "" {
		t.Fatal(d)
	}
	if len(ra.sends) == 0 {
		t.Fatal("no replies")
	}
}
