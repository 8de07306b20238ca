package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/termhost/termhost/sdk/abi"
)

// Start returns before the plugins are compiled: Has answers from the
// manifests, Attach and List wait for the load, Wait reports it.
func TestStartLoadsInTheBackground(t *testing.T) {
	r, err := Start(context.Background(), Config{Embedded: embedded(counter1), CacheDir: testCache, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Has("counter") || r.Has("upper") {
		t.Fatalf("while loading: Has(counter)=%v Has(upper)=%v", r.Has("counter"), r.Has("upper"))
	}
	b, err := r.Attach("counter", abi.KindTelnet, nil) // waits for the load
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if err := r.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l := r.List(); len(l) != 1 || l[0].Name != "counter" {
		t.Fatalf("List = %+v", l)
	}
}

// An embedded plugin that fails its canary is Wait's error and Attach's;
// Open fails with it.
func TestStartEmbeddedFailure(t *testing.T) {
	bad := fstest.MapFS{"bad.wasm": {Data: tinyPlugin(tinyManifest("counter", "9.0.0"), tinyExports(-1))}}
	r, err := Start(context.Background(), Config{Embedded: bad, CacheDir: testCache, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "canary") {
		t.Fatalf("Wait = %v; want the canary's error", err)
	}
	if _, err := r.Attach("counter", abi.KindTelnet, nil); !errors.Is(err, ErrUnknownPlugin) || !strings.Contains(err.Error(), "canary") {
		t.Fatalf("Attach = %v", err)
	}
	if _, err := Open(context.Background(), Config{Embedded: bad, CacheDir: testCache, Logger: testLogger(t)}); err == nil || !strings.Contains(err.Error(), "canary") {
		t.Fatalf("Open = %v", err)
	}
}

// Closing while the plugins compile (no cache: it takes a while) stops the
// load; nothing is published and every call says closed.
func TestCloseWhileLoading(t *testing.T) {
	r, err := Start(context.Background(), Config{Embedded: embedded(upper1, counter1), CacheDir: "off", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(context.Background()); err == nil {
		t.Fatal("Wait after Close: no error")
	}
	if _, err := r.Attach("counter", abi.KindTelnet, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Attach after Close = %v", err)
	}
	if l := r.List(); len(l) != 0 {
		t.Fatalf("List after Close = %+v", l)
	}
}
