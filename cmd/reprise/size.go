package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/reprise-vm/reprise/abi"
)

// byteSize is a pflag.Value for sizes like 64M, 1G, 512MiB or 67108864.
type byteSize uint64

var sizeSuffixes = []struct {
	suffix string
	shift  uint
}{
	{"KIB", 10}, {"MIB", 20}, {"GIB", 30}, {"KB", 10}, {"MB", 20}, {"GB", 30}, {"K", 10}, {"M", 20}, {"G", 30}, {"B", 0},
}

func (s *byteSize) Set(v string) error {
	u := strings.ToUpper(strings.TrimSpace(v))
	shift := uint(0)
	for _, suf := range sizeSuffixes {
		if strings.HasSuffix(u, suf.suffix) {
			u, shift = strings.TrimSpace(strings.TrimSuffix(u, suf.suffix)), suf.shift
			break
		}
	}
	n, err := strconv.ParseUint(u, 10, 64)
	if err != nil || n == 0 || n > (1<<62)>>shift {
		return fmt.Errorf("size %q: want a positive number with an optional K, M or G suffix", v)
	}
	*s = byteSize(n << shift)
	return nil
}

func (s *byteSize) String() string {
	switch v := uint64(*s); {
	case v != 0 && v%(1<<30) == 0:
		return fmt.Sprintf("%dG", v>>30)
	case v != 0 && v%(1<<20) == 0:
		return fmt.Sprintf("%dM", v>>20)
	default:
		return strconv.FormatUint(v, 10)
	}
}

func (s *byteSize) Type() string { return "size" }

// ramSize is --mem: a size guest RAM can have, checked as it is parsed so a
// typo (32G for 32M) is refused before anything is allocated.
type ramSize struct{ byteSize }

func (s *ramSize) Set(v string) error {
	var b byteSize
	if err := b.Set(v); err != nil {
		return err
	}
	if err := abi.CheckRAMSize(uint64(b)); err != nil {
		return err
	}
	s.byteSize = b
	return nil
}
