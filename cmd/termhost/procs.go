package main

import (
	"context"
	"log/slog"
	"os"
	"strconv"

	"github.com/termhost/termhost/internal/procs"
	"github.com/termhost/termhost/internal/rawio"
)

// startGovernor runs the processor governor (internal/procs) for serve,
// unless GOMAXPROCS is set in the environment: then Go's scheduler keeps
// what it says.
func startGovernor(ctx context.Context, log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	g := &procs.Governor{Changed: func(n int, cores float64) {
		log.Debug("processors for goroutines: "+strconv.Itoa(n), "load_cores", cores)
	}, Held: rawio.Slept}
	go g.Run(ctx)
}
