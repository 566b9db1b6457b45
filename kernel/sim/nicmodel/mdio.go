package nicmodel

// MDIC, the MDI control register: one transaction with a PHY, the same
// layout on the whole family.
const (
	MdicDataMask = 0xffff
	MdicRegSh    = 16
	MdicPhySh    = 21
	MdicOpWrite  = 1 << 26
	MdicOpRead   = 2 << 26
	MdicReady    = 1 << 28
	MdicIE       = 1 << 29 // interrupt (MDAC) at completion
	MdicError    = 1 << 30
	mdicOpMask   = 3 << 26
)

// MDI is what software wrote to MDIC.
type MDI uint32

// PHY is the PHY address.
func (m MDI) PHY() uint32 { return uint32(m) >> MdicPhySh & 0x1f }

// Reg is the PHY register.
func (m MDI) Reg() uint32 { return uint32(m) >> MdicRegSh & 0x1f }

// Data is the word to write.
func (m MDI) Data() uint16 { return uint16(m) }

// Read and Write report the opcode; an MDI with neither is malformed.
func (m MDI) Read() bool  { return uint32(m)&mdicOpMask == MdicOpRead }
func (m MDI) Write() bool { return uint32(m)&mdicOpMask == MdicOpWrite }

// Done is MDIC after the transaction: READY set, data in the data
// field, and ERROR when it failed.
func (m MDI) Done(data uint16, failed bool) uint32 {
	v := uint32(m)&^(MdicDataMask|MdicReady|MdicError) | MdicReady | uint32(data)
	if failed {
		v |= MdicError
	}
	return v
}

// IEEE 802.3 clause 22 PHY registers and the bits the models use.
const (
	PhyBMCR   = 0x00
	PhyBMSR   = 0x01
	PhyID1    = 0x02
	PhyID2    = 0x03
	PhyANAR   = 0x04
	PhyANLPAR = 0x05
	PhyANER   = 0x06
	PhyGBCR   = 0x09 // 1000BASE-T control
	PhyGBSR   = 0x0a // 1000BASE-T status
	PhyESR    = 0x0f // extended status

	BmcrSpeed1000 = 1 << 6
	BmcrFD        = 1 << 8
	BmcrRestartAN = 1 << 9
	BmcrPowerDown = 1 << 11
	BmcrANEnable  = 1 << 12
	BmcrSpeed100  = 1 << 13
	BmcrReset     = 1 << 15

	BmsrLinkStatus = 1 << 2
	BmsrANAble     = 1 << 3
	BmsrANComplete = 1 << 5

	Anar10HD  = 1 << 5
	Anar10FD  = 1 << 6
	Anar100HD = 1 << 7
	Anar100FD = 1 << 8

	Gbcr1000HD = 1 << 8
	Gbcr1000FD = 1 << 9

	GbsrLP1000HD = 1 << 10
	GbsrLP1000FD = 1 << 11
	GbsrRemoteOK = 1 << 12
	GbsrLocalOK  = 1 << 13
)
