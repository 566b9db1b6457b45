package probe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// enableMSIX gives f the n MSI-X vectors its driver asked for: n
// vectors from the platform, the capability's table (in the BAR its BIR
// names, checked to lie inside it) pointing entry i at vector i, MSI-X
// enabled. On an error nothing stays allocated or enabled, and the
// caller falls back to the function's one interrupt.
func enableMSIX(p Platform, f *pci.Function, n int) ([]kernel.MSI, error) {
	caps, err := pci.Capabilities(p.Config, f.Addr)
	if err != nil {
		return nil, err
	}
	c, ok := pci.FindCap(caps, pci.CapMSIX)
	if !ok {
		return nil, errors.New("no MSI-X capability")
	}
	m, err := pci.ReadMSIX(p.Config, f.Addr, c.Offset)
	if err != nil {
		return nil, err
	}
	if err := m.Check(f.BARs); err != nil {
		return nil, err
	}
	if n > m.TableSize {
		return nil, fmt.Errorf("%d vectors wanted, the table has %d", n, m.TableSize)
	}
	table, err := p.BAR(f, m.TableBIR)
	if err != nil {
		return nil, fmt.Errorf("table bar%d: %w", m.TableBIR, err)
	}
	vecs := make([]kernel.MSI, 0, n)
	release := func(err error) error {
		for _, v := range vecs {
			err = errors.Join(err, v.Close())
		}
		return err
	}
	msgs := make([]pci.Message, 0, n)
	for range n {
		v, err := p.MSI()
		if err != nil {
			return nil, release(fmt.Errorf("vector %d of %d: %w", len(vecs), n, err))
		}
		vecs = append(vecs, v)
		msgs = append(msgs, pci.Message{Addr: v.MSIAddress(), Data: uint32(v.MSIData())})
	}
	if err := m.Program(p.Config, f.Addr, table, msgs); err != nil {
		return nil, release(errors.Join(err, m.Disable(p.Config, f.Addr)))
	}
	return vecs, nil
}

// disableMSIX turns f's MSI-X off again and gives its vectors back,
// after a probe that failed.
func disableMSIX(p Platform, f *pci.Function, vecs []kernel.MSI) error {
	var errs []error
	if caps, err := pci.Capabilities(p.Config, f.Addr); err != nil {
		errs = append(errs, err)
	} else if c, ok := pci.FindCap(caps, pci.CapMSIX); ok {
		m, err := pci.ReadMSIX(p.Config, f.Addr, c.Offset)
		if err == nil {
			err = m.Disable(p.Config, f.Addr)
		}
		errs = append(errs, err)
	}
	for _, v := range vecs {
		errs = append(errs, v.Close())
	}
	return errors.Join(errs...)
}

// vectorList names vectors by their message data: "48 49 50".
func vectorList(vecs []kernel.MSI) string {
	s := make([]string, len(vecs))
	for i, v := range vecs {
		s[i] = fmt.Sprint(v.MSIData() & 0xff)
	}
	return strings.Join(s, " ")
}
