package adv

// RxFormat is the advanced receive descriptor format for ring.CleanRx.
type RxFormat struct{}

// Decode reads the DD bit first, the cheap test, then the write-back.
func (RxFormat) Decode(d []byte) (Rx, bool) {
	if !RxDone(d) {
		return Rx{}, false
	}
	return DecodeRx(d), true
}

// Clear writes the read format with a zero address.
func (RxFormat) Clear(d []byte) { EncodeRxRead(d, 0) }
