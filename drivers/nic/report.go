package nic

// DeviceStater is implemented by drivers that can list the device's own
// statistics registers apart from their driver counters (the ifstats
// file).
type DeviceStater interface {
	DeviceStats() []Stat
}

// TSOReasoner is implemented by drivers that can say why TSO is in its
// current state: "pch_spt quirk", "ctl tso off".
type TSOReasoner interface {
	TSOReason() string
}
