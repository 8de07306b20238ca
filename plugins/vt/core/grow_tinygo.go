//go:build tinygo

package core

// TinyGo's append allocates a grown array without the element type's
// pointer layout, so its collector scans it word by word as possible
// pointers: a truecolour style (0x02RRGGBB) or a cell then pins whatever
// heap object it happens to address. make knows the layout (none, for the
// pointer-free tables and buffers here), so these grow with make and copy
// instead. The Go build's versions (grow_go.go) leave it to append.

// reserve returns s with room for at least n more elements, reallocated
// with its layout (doubling) when its capacity is short.
func reserve[T any](s []T, n int) []T {
	if n <= cap(s)-len(s) {
		return s
	}
	ns := make([]T, len(s), max(2*cap(s), len(s)+n, 8))
	copy(ns, s)
	return ns
}

// grow is slices.Grow, allocating as reserve does.
func grow[T any](s []T, n int) []T { return reserve(s, n) }

// keep returns n elements (their values left over) of the array *p,
// reallocated when short and kept in *p.
func keep[T any](p *[]T, n int) []T {
	if cap(*p) < n {
		*p = make([]T, n)
	}
	return (*p)[:n]
}
