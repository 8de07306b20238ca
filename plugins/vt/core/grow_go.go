//go:build !tinygo

package core

import "slices"

// reserve and grow: see grow_tinygo.go. Go's append and slices.Grow
// allocate with the element's layout already.

// reserve returns s: the append that follows grows it.
func reserve[T any](s []T, n int) []T { return s }

// grow is slices.Grow.
func grow[T any](s []T, n int) []T { return slices.Grow(s, n) }

// keep returns a new array of n elements.
func keep[T any](_ *[]T, n int) []T { return make([]T, n) }
