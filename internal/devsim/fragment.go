package devsim

import (
	"math/rand/v2"
	"sync"
)

// RandomFragmenter returns a Config.Fragment function that cuts every write
// into pieces of random length between 1 and max bytes (max < 1 counts as
// 1). The sequence of lengths is determined by seed; the function is safe
// for concurrent use, but with several connections the interleaving (and
// so which connection gets which lengths) depends on scheduling.
func RandomFragmenter(seed int64, max int) func([]byte) [][]byte {
	if max < 1 {
		max = 1
	}
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	return func(p []byte) [][]byte {
		mu.Lock()
		defer mu.Unlock()
		var out [][]byte
		for len(p) > 0 {
			n := 1 + r.IntN(max)
			if n > len(p) {
				n = len(p)
			}
			out = append(out, p[:n:n])
			p = p[n:]
		}
		return out
	}
}
