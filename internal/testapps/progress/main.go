// Command progress is a test app: a green progress bar redrawn on one line
// with CR from 0 to 100%, then "done".
package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

func main() {
	steps := flag.Int("steps", 50, "steps to 100%")
	delay := flag.Duration("delay", 20*time.Millisecond, "time per step")
	flag.Parse()
	for i := 0; i <= *steps; i++ {
		pct := i * 100 / max(*steps, 1)
		fmt.Printf("\r\x1b[32m[%-40s]\x1b[0m %3d%%", strings.Repeat("#", pct*40/100), pct)
		time.Sleep(*delay)
	}
	fmt.Println("\ndone")
}
