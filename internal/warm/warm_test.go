package warm

import (
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	var nilGate *Gate
	select {
	case <-nilGate.Done():
	default:
		t.Fatal("a nil gate is not open")
	}
	nilGate.Open()

	g := NewGate(time.Hour)
	select {
	case <-g.Done():
		t.Fatal("open before Open")
	default:
	}
	g.Open()
	g.Open()
	select {
	case <-g.Done():
	case <-time.After(time.Second):
		t.Fatal("Open did not open it")
	}

	g = NewGate(10 * time.Millisecond)
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the delay did not open it")
	}
	g.Open()
}
