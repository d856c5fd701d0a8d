package abi

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestFrameLayout(t *testing.T) {
	require.Equal(t, uintptr(FrameSize), unsafe.Sizeof(Frame{}))
	require.Equal(t, uintptr(17*8), unsafe.Offsetof(Frame{}.RIP))
}
