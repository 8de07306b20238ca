package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugOptions: --debug-addr serves Go's profiler (net/http/pprof) for
// measuring termhost under load (issue 19); loopback only, since a heap
// profile holds whatever the heap holds.
type debugOptions struct{ addr string }

func (o *debugOptions) register(fs *flags) {
	fs.StringVar(&o.addr, "debug-addr", "", "serve Go's profiler (net/http/pprof) at http://`ADDR`/debug/pprof/ (a loopback address only; :0 picks a port)")
	fs.env("debug-addr", "TERMHOST_DEBUG_ADDR")
}

// check refuses an address that is not loopback: a heap profile holds
// secrets as the heap does.
func (o *debugOptions) check() error {
	if o.addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usagef("debug-addr %q: expected host:port (e.g. 127.0.0.1:6060): %v", o.addr, err)
	}
	if host == "" || host == "localhost" {
		return nil // bound to 127.0.0.1 below
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usagef("debug-addr %q: the profiler serves only on a loopback address (a heap profile holds what the heap holds: secrets too)", o.addr)
	}
	return nil
}

// serve starts the profiler until ctx ends; it logs where.
func (o *debugOptions) serve(ctx context.Context, log *slog.Logger) error {
	if o.addr == "" {
		return nil
	}
	addr := o.addr
	if host, port, _ := net.SplitHostPort(addr); host == "" || host == "localhost" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug server stopped", "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	log.Info("debug: Go's profiler at http://" + ln.Addr().String() + "/debug/pprof/")
	return nil
}
