package ring

import "gvisor.dev/gvisor/pkg/buffer"

// Refs returns how many views share v's memory, and false if that cannot
// be known: for drivers that lay out their own RX pages and reuse a page
// only while the stack holds no part of it.
func Refs(v *buffer.View) (int64, bool) { return chunkRefs(v) }
