package ether9

import (
	"crypto/x509"
	"fmt"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Roots is the pool of CA roots built into the program
// (golang.org/x/crypto/x509roots/fallback, Mozilla's list): the image has
// no system store. It is built anew on each call; Machine keeps one.
func Roots() (*x509.CertPool, error) {
	p := x509.NewCertPool()
	for r := range bundle.Roots() {
		c, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			return nil, fmt.Errorf("ether9: built-in root: %w", err)
		}
		if r.Constraint == nil {
			p.AddCert(c)
		} else {
			p.AddCertWithConstraint(c, r.Constraint)
		}
	}
	return p, nil
}
