package plugin

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/termhost/termhost/sdk/abi"
)

// TestCheckOnUse: with CheckOnUse, an embedded plugin the cache has not
// seen is neither compiled nor checked at load; its first session
// compiles it and runs its canary (once), the check is recorded in the
// cache's index, and the next registry loads it as checked. A plugin
// that fails its canary fails its first Attach, naming the canary, and
// the next one again.
func TestCheckOnUse(t *testing.T) {
	cache := t.TempDir()
	r := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache, CheckOnUse: true})
	if n := r.canaries.Load(); n != 0 {
		t.Fatalf("load ran %d canaries; want 0", n)
	}
	if compiled(r, "tiny") {
		t.Fatal("compiled at load")
	}
	b := attach(t, r, "tiny", "")
	if got, _ := send(t, b, "c"); got != "c" {
		t.Fatalf("session: %q", got)
	}
	if n := r.canaries.Load(); n != 1 {
		t.Fatalf("first session ran %d canaries; want 1", n)
	}
	attach(t, r, "tiny", "")
	if n := r.canaries.Load(); n != 1 {
		t.Fatalf("second session: %d canaries in all; want 1", n)
	}
	sub := filepath.Join(cache, wazeroCacheSubdir())
	for deadline := time.Now().Add(5 * time.Second); len(readIndex(sub).Checked) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the check was not recorded in the cache's index")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Close()
	r2 := open(t, Config{Embedded: tinyFS("1.0.0"), CacheDir: cache, CheckOnUse: true})
	attach(t, r2, "tiny", "")
	if n := r2.canaries.Load(); n != 0 {
		t.Fatalf("a checked version ran %d canaries; want 0", n)
	}

	bad := fstest.MapFS{"bad.wasm": {Data: tinyPlugin(tinyManifest("counter", "9.0.0"), tinyExports(-1))}}
	r3, err := Start(context.Background(), Config{Embedded: bad, CacheDir: t.TempDir(), CheckOnUse: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	if err := r3.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v; the canary runs at first use", err)
	}
	for i := range 2 {
		if _, err := r3.Attach("counter", abi.KindTelnet, nil); err == nil || !strings.Contains(err.Error(), "canary") {
			t.Fatalf("Attach %d = %v; want the canary's error", i+1, err)
		}
	}
}
